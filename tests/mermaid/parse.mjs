// A mermaid flowchart from stdin, parsed by mermaid's own parser (what GitHub runs before it
// draws one): prints its vertices, edges and subgraphs as JSON, or the parse error and exits 1.
// jsdom gives DOMPurify, which mermaid sanitises labels with, the window it needs.
import { JSDOM } from 'jsdom';
import fs from 'fs';
const dom = new JSDOM('<!DOCTYPE html><html><body></body></html>');
globalThis.window = dom.window;
globalThis.document = dom.window.document;
const { default: mermaid } = await import('mermaid');
const text = fs.readFileSync(0, 'utf8');
try {
  await mermaid.parse(text);
  const diagram = await mermaid.mermaidAPI.getDiagramFromText(text);
  const db = diagram.db;
  const vertices = [...db.getVertices().values()].map(v => ({id: v.id, text: v.text}));
  const edges = db.getEdges().map(e => ({start: e.start, end: e.end, text: e.text}));
  const subgraphs = db.getSubGraphs().map(s => ({id: s.id, title: s.title, nodes: s.nodes}));
  console.log(JSON.stringify({vertices, edges, subgraphs}));
} catch (e) {
  console.error('PARSE ERROR', String(e.message || e).slice(0, 500));
  process.exit(1);
}
