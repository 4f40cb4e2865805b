"""The target policy: what a spec may name, what it may not, and that refusing never imports.

The sweep tests walk every public callable of the default namespaces and check each allowed one
against an allow-listed set of home modules and a list of suspicious parameter names; the
curated tests name the dangerous functions reachable from inside torch and check each is
refused, through every alias we know of.
"""

from __future__ import annotations

import inspect
import json
import os
import re
import subprocess
import sys
import textwrap
import types
from pathlib import Path
from typing import Any

import pytest
import torch
from helpers import HANG_WATCHDOG

import fxgen
from fxgen._errors import FxgenError, SpecError
from fxgen.check.validate import validate_data
from fxgen.policy.policy import DEFAULT_POLICY, Policy, TargetError, type_repr
from fxgen.policy.tables import SAFE_BUILTINS

ROOT = Path(__file__).resolve().parents[2]

# -- the sweep ---------------------------------------------------------------------------------
SWEPT = {
    "torch": torch,
    "torch.nn.functional": torch.nn.functional,
    "torch.fft": torch.fft,
    "torch.linalg": torch.linalg,
    "torch.special": torch.special,
}
# Where an allowed callable may be defined. ATen bindings report "torch" or a torch._C namespace.
ALLOWED_HOMES = {
    "torch", "torch.functional", "torch.nn.functional", "torch._C._nn", "torch._C._fft",
    "torch._C._linalg", "torch._C._special", "torch._lowrank", "torch._lobpcg",
}  # fmt: skip
# Parameter names of functions that read or write files, load code or talk to the network.
SUSPICIOUS_PARAMS = {"filename", "file", "f", "fname", "filepath", "path", "pickle_module", "map_location",
                     "url", "repo_or_dir", "name_or_path", "shared"}  # fmt: skip
# Reviewed: these parameters only share a name with a file argument.
NOT_FILES = {"torch.sym_ite": {"f"}}  # sym_ite(b, t, f): the value when b is false


def _public_callables() -> list[tuple[str, Any]]:
    out = []
    for prefix, module in SWEPT.items():
        for name, obj in sorted(vars(module).items()):
            if not name.startswith("_") and callable(obj) and not isinstance(obj, types.ModuleType):
                out.append((f"{prefix}.{name}", obj))
    return out


def _parameter_names(obj: Any) -> set[str]:
    """Parameter names from the signature, or from the ``name(a, b, *, c=...)`` lines of a C docstring."""
    try:
        return set(inspect.signature(obj).parameters)
    except (TypeError, ValueError):
        pass
    names: set[str] = set()
    doc = getattr(obj, "__doc__", None) or ""
    short = getattr(obj, "__name__", "")
    for match in re.finditer(rf"^\s*{re.escape(short)}\((.*?)\)", doc, re.MULTILINE):
        for part in match.group(1).split(","):
            part = part.strip().lstrip("*")
            ident = re.match(r"[A-Za-z_][A-Za-z0-9_]*", part)
            if ident:
                names.add(ident.group())
    return names


def _allowed(target: str) -> bool:
    try:
        DEFAULT_POLICY.resolve_function(target)
    except TargetError:
        return False
    return True


def test_sweep_every_allowed_callable_is_a_tensor_operation() -> None:
    allowed, refused = [], []
    problems = []
    for spelled, obj in _public_callables():
        if not _allowed(spelled):
            refused.append(spelled)
            continue
        allowed.append(spelled)
        module = getattr(obj, "__module__", None)
        if isinstance(obj, type):
            if obj not in (torch.Size, torch.device, torch.finfo, torch.iinfo, *SAFE_BUILTINS.values()):
                problems.append(f"{spelled}: class {obj!r} allowed as a function")
            continue
        if module not in ALLOWED_HOMES:
            problems.append(f"{spelled}: defined in {module!r}")
        bad = _parameter_names(obj) & SUSPICIOUS_PARAMS - NOT_FILES.get(spelled, set())
        if bad:
            problems.append(f"{spelled}: suspicious parameter(s) {sorted(bad)}")
    assert not problems, "\n".join(problems)
    # The sweep is meaningful: most of torch's operators are in, the rest is refused.
    assert len(allowed) > 700, len(allowed)
    assert len(refused) > 100, len(refused)


def test_sweep_python_functions_from_torch_init_are_listed_explicitly() -> None:
    """torch/__init__.py's own functions mostly set process state: only a few named ones pass."""
    allowed = sorted(
        name for name, obj in vars(torch).items()
        if isinstance(obj, types.FunctionType) and obj.__module__ == "torch" and _allowed(f"torch.{name}")
    )  # fmt: skip
    assert set(allowed) <= {"is_tensor", "is_storage", "typename", "_assert", "sym_float", "sym_int", "sym_max",
                            "sym_min", "sym_not", "sym_ite", "sym_sum", "sym_sqrt"}, allowed  # fmt: skip


def test_sweep_c_functions_reexported_into_torch_are_refused() -> None:
    """torch re-exports every public torch._C function with __module__ = "torch"; none is an op."""
    aten = set(dir(type(torch._C._VariableFunctions)))
    leaked = sorted(
        name for name, obj in vars(torch).items()
        if isinstance(obj, types.BuiltinFunctionType) and not name.startswith("_") and name not in aten
        and _allowed(f"torch.{name}")
    )  # fmt: skip
    assert leaked == [], leaked


DANGEROUS_FUNCTIONS = [
    # I/O, serialization, code loading, networking, compilers
    "torch.load", "torch.save", "torch.from_file", "torch.serialization.load", "torch.hub.load",
    "torch.hub.download_url_to_file", "torch.hub.load_state_dict_from_url", "torch.ops.load_library",
    "torch.ops.aten.add", "torch.classes.load_library", "torch.library.Library", "torch.library.define",
    "torch.utils.cpp_extension.load", "torch.utils.cpp_extension.load_inline", "torch.jit.load",
    "torch.jit.save", "torch.jit.script", "torch.Storage.from_file", "torch.UntypedStorage.from_file",
    "torch.FloatStorage.from_file", "torch.TypedStorage.from_file", "torch.compile", "torch.export.export",
    "torch.onnx.export", "torch._dynamo.optimize", "torch.fx.wrap", "torch.package.PackageImporter",
    "torch.PyTorchFileReader", "torch.PyTorchFileWriter", "torch.import_ir_module",
    "torch.import_ir_module_from_buffer", "torch.parse_ir", "torch.get_file_path",
    "torch.utils.data.DataLoader", "torch.multiprocessing.spawn", "torch.distributed.init_process_group",
    "torch.profiler.profile", "torch.autograd.profiler.profile", "torch.cuda.memory._dump_snapshot",
    "torch.testing.assert_close", "torch.fork", "torch.wait",
    # process-wide state
    "torch.set_default_device", "torch.set_default_dtype", "torch.set_default_tensor_type",
    "torch.manual_seed", "torch.seed", "torch.set_rng_state", "torch.random.manual_seed",
    "torch.use_deterministic_algorithms", "torch.set_num_threads", "torch.set_printoptions",
    "torch.set_flush_denormal", "torch.set_anomaly_enabled", "torch.set_grad_enabled",
    "torch.backends.cudnn.flags", "torch.cond", "torch.vmap", "torch.func.vmap", "torch.while_loop",
    "torch.autograd.grad", "torch.autograd.backward", "torch.autograd.graph.saved_tensors_hooks",
    "torch.nn.modules.module.register_module_forward_hook",
    "torch.nn.modules.module.register_module_forward_pre_hook",
    "torch.nn.modules.module.register_module_full_backward_hook",
    "torch.nn.utils.parametrize.register_parametrization",
    # aliases of the above and of os/sys through modules torch imports
    "torch.os.system", "torch.nn.functional.torch.load", "torch.serialization.os.system",
    "torch.nn.modules.module.torch.load", "torch.nn.functional.importlib.import_module",
    "torch.nn.functional.warnings.warn", "torch.nn.functional.sys.exit", "torch.functional.torch.save",
    "torch.nn.functional.math.torch", "logging.os.system", "os.system", "subprocess.run", "sys.exit",
    "torch._C._jit_pass_inline", "torch._C.import_ir_module", "torch._C._load_for_lite_interpreter",
    "torch._utils_internal.get_file_path", "torch._C._nn.torch", "torch._C._VariableFunctions.from_file",
    # tensor methods that register hooks, expose storage or escape to other objects
    "torch.Tensor.register_hook", "torch.Tensor.register_post_accumulate_grad_hook", "torch.Tensor.storage",
    "torch.Tensor.untyped_storage", "torch.Tensor.numpy", "torch.Tensor.apply_", "torch.Tensor.map_",
    "torch.Tensor.share_memory_", "torch.Tensor.backward", "torch.Tensor.set_", "torch.Tensor.__reduce_ex__",
    "torch.Tensor.__class__", "torch.Tensor.__init_subclass__", "torch.Tensor.mro", "torch.Tensor.grad_fn",
    # typing: NamedTuple + get_type_hints is eval of a string
    "typing.get_type_hints", "typing.NamedTuple", "typing.cast", "typing.ForwardRef", "typing.TypedDict",
    # operator's callers and builtins that run or look up anything
    "operator.attrgetter", "operator.methodcaller", "operator.call", "operator.itemgetter",
    "eval", "exec", "open", "__import__", "compile", "setattr", "delattr", "globals", "vars", "type",
    "object", "breakpoint", "input", "print", "builtins.eval", "builtins.getattr", "math.__loader__",
    # torch.nn.Module machinery is not a graph function
    "torch.nn.Linear", "torch.nn.Module.register_forward_hook", "torch.nn.Module.load_state_dict",
    "torch.nn.Module.apply", "torch.nn.Linear.forward", "torch.nn.functional.handle_torch_function",
    "torch.nn.functional.boolean_dispatch", "torch.nn.functional.has_torch_function", "torch.Generator",
    "torch.Tensor", "torch.autograd.Function.apply", "torch.distributions.Normal",
    # torch.fx's helpers are allowed by exact name: not its namespace, other spellings or neighbours
    "torch.fx.symbolic_trace", "torch.fx._symbolic_trace.symbolic_trace", "torch.fx._symbolic_trace.wrap",
    "torch.fx._symbolic_trace._assert_is_none.x", "torch.fx._symbolic_trace.torch.load",
    "torch.fx._symbolic_trace._assert_is_none ",
]  # fmt: skip


@pytest.mark.parametrize("target", DANGEROUS_FUNCTIONS)
def test_dangerous_functions_are_refused(target: str) -> None:
    with pytest.raises(TargetError):
        DEFAULT_POLICY.resolve_function(target)


DANGEROUS_CLASSES = [
    "torch.nn.parallel.DistributedDataParallel", "torch.nn.parallel.DataParallel", "torch.jit.ScriptModule",
    "torch.fx.GraphModule", "torch.nn.utils.parametrize.ParametrizationList", "torch.nn.quantized.Linear",
    "torch.ao.nn.quantized.Linear", "collections.OrderedDict", "os.system", "torch.load", "torch.Tensor",
    "torch.nn.Linear.__class__", "torch.nn.functional.torch.jit.ScriptModule", "builtins.type",
]  # fmt: skip


@pytest.mark.parametrize("target", DANGEROUS_CLASSES)
def test_dangerous_module_classes_are_refused(target: str) -> None:
    with pytest.raises(TargetError):
        DEFAULT_POLICY.resolve_module_class(target)


ALLOWED_FUNCTIONS = {
    "torch.relu": torch.relu, "torch.nn.functional.gelu": torch.nn.functional.gelu,
    "torch._C._nn.gelu": torch._C._nn.gelu, "torch.fft.fft": torch.fft.fft, "torch.linalg.norm": torch.linalg.norm,
    "torch.special.expit": torch.special.expit, "operator.add": __import__("operator").add,
    "operator.getitem": __import__("operator").getitem, "operator.setitem": __import__("operator").setitem,
    "math.sqrt": __import__("math").sqrt, "torch.Tensor.add": torch.Tensor.add, "torch.Tensor.view": torch.Tensor.view,
    "torch.Tensor.split": torch.Tensor.split, "torch.einsum": torch.einsum, "torch.functional.einsum": torch.einsum,
    "torch.Size": torch.Size, "torch.device": torch.device, "getattr": getattr, "len": len, "torch._assert": torch._assert,
    "torch.nn.functional.scaled_dot_product_attention": torch.nn.functional.scaled_dot_product_attention,
    "torch.nn.functional.interpolate": torch.nn.functional.interpolate, "torch.where": torch.where,
    "torch.nn.functional.torch.relu": torch.relu,  # a harmless alias is still the same harmless object
    # what symbolic_trace writes for concrete_args={"mask": None}, allowed by this exact name only
    "torch.fx._symbolic_trace._assert_is_none": torch.fx._symbolic_trace._assert_is_none,
}  # fmt: skip


@pytest.mark.parametrize("target", sorted(ALLOWED_FUNCTIONS))
def test_tensor_operations_are_allowed(target: str) -> None:
    assert DEFAULT_POLICY.resolve_function(target) is ALLOWED_FUNCTIONS[target]


@pytest.mark.parametrize(
    "target", ["torch.nn.Conv2d", "torch.nn.modules.conv.Conv2d", "torch.nn.Linear", "torch.nn.TransformerEncoderLayer",
               "torch.nn.Sequential", "torch.nn.modules.Linear", "torch.nn.LazyLinear"],
)  # fmt: skip
def test_torch_nn_module_classes_are_allowed(target: str) -> None:
    assert issubclass(DEFAULT_POLICY.resolve_module_class(target), torch.nn.Module)


# -- methods and getattr -----------------------------------------------------------------------
@pytest.mark.parametrize(
    "name", ["register_hook", "register_post_accumulate_grad_hook", "apply_", "map_", "map2_", "storage",
             "untyped_storage", "storage_type", "share_memory_", "set_", "numpy", "data_ptr", "backward",
             "format", "format_map", "register_forward_hook", "load_state_dict", "tofile", "dump",
             "__class__", "__reduce_ex__", "_base", "relu\n", "view()", "", "mro", "__subclasses__"],
)  # fmt: skip
def test_dangerous_methods_are_refused(name: str) -> None:
    with pytest.raises(TargetError):
        DEFAULT_POLICY.check_method(name)


@pytest.mark.parametrize("name", ["view", "reshape", "transpose", "contiguous", "to", "size", "softmax", "masked_fill",
                                  "keys", "items", "get", "index", "count", "split", "tolist", "add_"])  # fmt: skip
def test_tensor_and_container_methods_are_allowed(name: str) -> None:
    DEFAULT_POLICY.check_method(name)


@pytest.mark.parametrize(
    "name", ["grad_fn", "numpy", "__class__", "__dict__", "_version", "register_hook", "storage", "tofile",
             "format", "f_globals", "gi_frame", "__globals__", "shape\n"],
)  # fmt: skip
def test_dangerous_attributes_are_refused(name: str) -> None:
    with pytest.raises(TargetError):
        DEFAULT_POLICY.check_attribute(name)


@pytest.mark.parametrize("name", ["shape", "dtype", "device", "ndim", "T", "real", "is_floating_point", "eps", "view"])
def test_tensor_attributes_are_allowed(name: str) -> None:
    DEFAULT_POLICY.check_attribute(name)


def test_users_allow_methods_from_trusted_code() -> None:
    with pytest.raises(TargetError):
        DEFAULT_POLICY.check_method("numpy")
    Policy(("torch.Tensor.numpy",)).check_method("numpy")
    Policy(("torch.Tensor.numpy",)).check_attribute("numpy")
    with pytest.raises(TargetError):  # a bare "numpy" names the package, not the method
        Policy(("numpy",)).check_method("numpy")


def test_module_attributes_must_be_public_data() -> None:
    linear = torch.nn.Linear(2, 2)
    DEFAULT_POLICY.check_module_attribute("weight", linear.weight)
    DEFAULT_POLICY.check_module_attribute("in_features", linear.in_features)
    for path, value in [("_forward_hooks", linear._forward_hooks), ("forward", linear.forward),
                        ("_modules", linear._modules), ("weight._base", None)]:  # fmt: skip
        with pytest.raises(TargetError):
            DEFAULT_POLICY.check_module_attribute(path, value)
    with pytest.raises(TargetError):
        DEFAULT_POLICY.check_module_attribute("self_attn", torch.nn.MultiheadAttention(4, 2))


# -- types ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("expr", "canonical"),
    [("torch.Tensor", "torch.Tensor"), ("typing.Optional[torch.Tensor]", "typing.Optional[torch.Tensor]"),
     ("tuple[torch.Tensor, int]", "tuple[torch.Tensor, int]"), ("int | None", "typing.Optional[int]"),
     ("tuple[int, ...]", "tuple[int, ...]"), ("dict[str, typing.Any]", "dict[str, typing.Any]"),
     ("typing.Callable[[int], int]", "typing.Callable[[int], int]"), ("None", "None"), ("int", "int"),
     ("torch.nn.Linear", "torch.nn.modules.linear.Linear"), ("torch.Size", "torch.Size"),
     ("typing.List[torch.Tensor]", "typing.List[torch.Tensor]"), (" int ", "int")],
)  # fmt: skip
def test_types_resolve_to_a_canonical_spelling(expr: str, canonical: str) -> None:
    value, text = DEFAULT_POLICY.resolve_type(expr)
    assert text == canonical
    assert DEFAULT_POLICY.resolve_type(text) == (value, text)
    assert type_repr(value) == canonical


@pytest.mark.parametrize(
    "expr", ["os.PathLike", "torch.fx.Proxy", "typing.get_type_hints", "typing.NamedTuple", "__import__('os')",
             "int.__class__", "torch.Tensor.register_hook", "lambda: 0", "typing.Literal['x']",
             "typing.Annotated[int, print('x')]", "[i for i in x]", "torch.Tensor[int]", "x" * 2000,
             "tuple[" * 300 + "int" + "]" * 300, "torch._dynamo.config", "math.pi", "typing.sys",
             "torch.os.PathLike", "int\x00", "torch.Tensor()", "torch.Tensor if x else int"],
)  # fmt: skip
def test_bad_types_are_refused(expr: str) -> None:
    with pytest.raises(TargetError):
        DEFAULT_POLICY.resolve_type(expr)


# -- allow entries --------------------------------------------------------------------------------
@pytest.mark.parametrize("entry", ["os system", "os.", ".os", "os..path", "1os", "os;import", "é", "a-b"])
def test_invalid_allow_entries_are_errors(entry: str) -> None:
    with pytest.raises(FxgenError):
        Policy((entry,))


def test_allow_entries_widen_the_policy_exactly() -> None:
    with pytest.raises(TargetError):
        DEFAULT_POLICY.resolve_function("torch.manual_seed")
    assert Policy(("torch.manual_seed",)).resolve_function("torch.manual_seed") is torch.manual_seed
    # a module entry allows what is *defined* there, not what it re-exports
    dist = Policy(("torch.distributions",))
    assert dist.resolve_function("torch.distributions.Normal") is torch.distributions.Normal
    with pytest.raises(TargetError):
        dist.resolve_function("torch.distributions.constraints.torch.load")


# -- refused names are never imported -------------------------------------------------------------
FAKE_PACKAGE = {
    "__init__.py": """
        import os
        from os import system
        from pathlib import Path
        import torch

        Path(os.environ["FXGEN_FAKE_MARKER"]).touch()  # records that the package was imported

        def evil(x):
            return x

        class Layer(torch.nn.Module):
            def forward(self, x):
                return x
    """,
    "sub.py": """
        import os
        from pathlib import Path

        Path(os.environ["FXGEN_FAKE_MARKER"] + ".sub").touch()

        def thing(x):
            return x
    """,
}


@pytest.fixture
def fake_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A package ``fxgen_fake_pkg`` on sys.path that leaves a marker file when imported."""
    package = tmp_path / "site" / "fxgen_fake_pkg"
    package.mkdir(parents=True)
    for name, text in FAKE_PACKAGE.items():
        (package / name).write_text(textwrap.dedent(text))
    marker = tmp_path / "imported"
    monkeypatch.setenv("FXGEN_FAKE_MARKER", str(marker))
    monkeypatch.syspath_prepend(str(package.parent))
    for name in ("fxgen_fake_pkg", "fxgen_fake_pkg.sub"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    return marker


def _fake_spec(target: str = "fxgen_fake_pkg.evil", cls: str = "fxgen_fake_pkg.Layer") -> dict[str, Any]:
    return {
        "fxgen": 1, "name": "Fake",
        "modules": {"layer": {"class": cls}},
        "nodes": [{"op": "placeholder", "name": "x"},
                  {"op": "call_function", "name": "y", "target": target, "args": ["%x"]},
                  {"op": "call_module", "name": "z", "target": "layer", "args": ["%y"]},
                  {"op": "output", "args": ["%z"]}],
    }  # fmt: skip


def test_refused_package_is_never_imported(fake_package: Path, tmp_path: Path) -> None:
    path = tmp_path / "fake.json"
    path.write_text(json.dumps(_fake_spec()))
    for attempt in (lambda: fxgen.load_spec(path), lambda: fxgen.load(path), lambda: fxgen.generate(path),
                    lambda: fxgen.load(_fake_spec())):  # fmt: skip
        with pytest.raises(SpecError) as info:
            attempt()
        assert "--allow fxgen_fake_pkg" in str(info.value)
    assert not fake_package.exists()
    assert "fxgen_fake_pkg" not in sys.modules


def test_allowed_package_is_imported(fake_package: Path) -> None:
    gm = fxgen.load(_fake_spec(), allow=["fxgen_fake_pkg"])
    assert fake_package.exists()
    assert torch.equal(gm(torch.ones(2)), torch.ones(2))
    assert not Path(str(fake_package) + ".sub").exists()  # only what the spec needed


def test_allowing_one_name_imports_only_the_way_to_it(fake_package: Path) -> None:
    policy = ["fxgen_fake_pkg.evil", "fxgen_fake_pkg.Layer"]
    fxgen.load(_fake_spec(), allow=policy)
    with pytest.raises(SpecError):  # a sibling submodule is neither allowed nor imported
        fxgen.load(_fake_spec(target="fxgen_fake_pkg.sub.thing"), allow=policy)
    assert not Path(str(fake_package) + ".sub").exists()
    assert "fxgen_fake_pkg.sub" not in sys.modules


@pytest.mark.parametrize("target", ["fxgen_fake_pkg.system", "fxgen_fake_pkg.os.system", "fxgen_fake_pkg.torch.load",
                                    "fxgen_fake_pkg.Path", "fxgen_fake_pkg.torch.hub.load"])  # fmt: skip
def test_allowed_package_does_not_lend_its_imports(fake_package: Path, target: str) -> None:
    """A module entry allows what is defined in the module, not what it imported."""
    with pytest.raises(SpecError) as info:
        validate_data(_fake_spec(target=target), Policy(("fxgen_fake_pkg",)))
    assert target in str(info.value)


def test_refusals_are_located_and_say_how_to_allow(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(
        "fxgen: 1\nname: Bad\nnodes:\n  - {op: placeholder, name: x}\n"
        "  - {op: call_function, name: y, target: torch.load, args: ['%x']}\n"
        "  - {op: call_method, name: z, target: numpy, args: ['%y']}\n  - {op: output, args: ['%z']}\n"
    )
    with pytest.raises(SpecError) as info:
        fxgen.load_spec(path)
    lines = str(info.value).splitlines()
    assert len(lines) == 2
    assert lines[0].startswith(f"{path}:5:") and "'torch.load'" in lines[0] and "--allow torch.load" in lines[0]
    assert lines[1].startswith(f"{path}:6:") and "'numpy'" in lines[1] and "--allow torch.Tensor.numpy" in lines[1]
    assert "node 'y'" in lines[0] and "node 'z'" in lines[1]  # the message names the node too


def test_a_spec_cannot_widen_its_own_policy() -> None:
    spec = {**_fake_spec(target="torch.load", cls="torch.nn.Identity"), "allow": ["torch.load"]}
    with pytest.raises(SpecError) as info:
        validate_data(spec)
    assert "'allow'" in str(info.value)


# -- whole-process checks (a fresh interpreter, so nothing else imported the modules first) --------
_NO_IMPORT_CHECK = r"""
import json, sys
import torch, fxgen, fxgen.check.validate
from fxgen._errors import SpecError

def spec(target, op="call_function", cls="torch.nn.Identity", type_="torch.Tensor"):
    return {"fxgen": 1, "name": "M", "modules": {"m": {"class": cls}},
            "nodes": [{"op": "placeholder", "name": "x", "type": type_},
                      {"op": op, "name": "y", "target": target, "args": ["%x"]},
                      {"op": "output", "args": ["%y"]}]}

fxgen.generate(fxgen.check.validate.validate_data(spec("torch.relu")))  # warm up every lazy import
fxgen.load(spec("torch.relu"))
try:  # and jsonschema's, which only explains a document the schema refuses
    fxgen.check.validate.validate_data({"fxgen": 1})
except SpecError:
    pass
before = set(sys.modules)
targets = json.loads(sys.argv[1])
for target in targets:
    for data in (spec(target), spec("torch.relu", cls=target), spec("torch.relu", type_=target)):
        for stage in (fxgen.check.validate.validate_data, fxgen.load):
            try:
                stage(data)
            except SpecError:
                pass
            else:
                if data["nodes"][1]["target"] == target:
                    raise SystemExit(f"{target} was accepted")
print(json.dumps(sorted(set(sys.modules) - before)))
"""


def test_resolving_refused_names_imports_nothing() -> None:
    targets = [t for t in DANGEROUS_FUNCTIONS if "." in t] + [
        "torch._dynamo.config.x", "torch._inductor.config", "torch.onnx.dynamo_export", "torch._export.x",
        "torch.utils.tensorboard.SummaryWriter", "torch.distributed.rpc.init_rpc", "torch.ao.quantization.quantize_fx",
        "torch.nn.modules.nonexistent_module.X", "torch._C._nonexistent.x", "numpy.save", "pickle.loads",
        "importlib.import_module", "ctypes.CDLL", "shutil.rmtree",
    ]  # fmt: skip
    result = subprocess.run(
        [sys.executable, "-c", _NO_IMPORT_CHECK, json.dumps(targets)],
        capture_output=True, text=True, timeout=HANG_WATCHDOG, env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    imported = json.loads(result.stdout.strip().splitlines()[-1])
    assert imported == [], imported


def test_default_policy_is_documented() -> None:
    """docs/security.md names the default namespaces and the builtins it allows."""
    text = (ROOT / "docs" / "security.md").read_text()
    for name in ("torch.nn.functional", "torch.fft", "torch.linalg", "torch.special", "operator", "math"):
        assert f"`{name}`" in text
    for name in SAFE_BUILTINS:
        assert f"`{name}`" in text, name


@pytest.mark.parametrize("target", ["lin._forward_hooks", "lin._modules", "lin.forward", "lin.register_forward_hook",
                                    "tr.encoder", "tr.encoder.layers"])  # fmt: skip
def test_get_attr_cannot_reach_module_internals(target: str) -> None:
    """get_attr inside a declared module reads public tensors and plain data, never hooks or submodules."""
    spec = {
        "fxgen": 1, "name": "Internals",
        "modules": {"lin": {"class": "torch.nn.Linear", "args": [2, 2]},
                    "tr": {"class": "torch.nn.Transformer", "args": [4, 2, 1, 1, 8]}},
        "nodes": [{"op": "placeholder", "name": "x"}, {"op": "get_attr", "name": "h", "target": target},
                  {"op": "output", "args": ["%h"]}],
    }  # fmt: skip
    with pytest.raises(SpecError) as info:
        validate_data(spec)
    assert "node 'h'" in str(info.value)
    for ok in ("lin.weight", "lin.in_features"):
        spec["nodes"][1]["target"] = ok
        validate_data(spec)


def test_policy_for_an_empty_allow_list_is_the_default_policy() -> None:
    """``allow=()`` (what the CLI and bench pass) shares the default policy and its memo of
    resolved targets; a real allow list gets a Policy of its own each time, with fresh answers."""
    from fxgen.policy.policy import policy_for

    assert policy_for(()) is DEFAULT_POLICY and policy_for([" ", ""]) is DEFAULT_POLICY
    assert policy_for(None) is DEFAULT_POLICY and policy_for(iter(())) is DEFAULT_POLICY
    first = policy_for(("json", "collections"))
    assert first == policy_for(["collections", "json"]) and first is not policy_for(("json", "collections"))
    assert policy_for("json").resolve_function("json.dumps") is json.dumps
    with pytest.raises(TargetError):
        DEFAULT_POLICY.resolve_function("json.dumps")
    for bad in ([["json"]], ["not a name"], [3], ["", 3]):
        with pytest.raises(FxgenError):
            policy_for(bad)


def test_the_memos_stay_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    """A long-lived process that validates many distinct specs keeps at most MEMO_LIMIT answers
    per memo, and still answers right after a memo is emptied."""
    import fxgen.policy.policy

    monkeypatch.setattr(fxgen.policy.policy, "MEMO_LIMIT", 4)
    policy = Policy()
    kinds = ["int", "float", "bool", "str"]
    expressions = [f"typing.Tuple[{a}, {b}]" for a in kinds for b in kinds]  # 16 distinct types
    for expr in expressions * 2:
        assert policy.resolve_type(expr)[1] == expr
        assert len(policy._types) <= 4
    functions = ["torch.relu", "torch.add", "torch.cat", "torch.sigmoid", "torch.tanh", "operator.add"]
    for target in functions * 2:
        assert policy.resolve_function(target) is DEFAULT_POLICY.resolve_function(target)
        assert len(policy._functions) <= 4
    classes = ["torch.nn.Linear", "torch.nn.ReLU", "torch.nn.Conv2d", "torch.nn.Identity", "torch.nn.GELU"]
    for target in classes * 2:
        assert policy.resolve_module_class(target) is getattr(torch.nn, target.rsplit(".", 1)[1])
        assert len(policy._classes) <= 4
    for method in ["view", "reshape", "add", "mul", "size", "flatten"] * 2:
        policy.check_method(method)
        assert len(policy._methods) <= 4
    with pytest.raises(TargetError):
        policy.check_method("register_hook")


def test_a_torch_function_defined_under_a_private_name_is_allowed_by_its_public_one() -> None:
    """torch.sym_sqrt is the function torch defines as `_sym_sqrt`: a TorchDynamo capture with
    symbolic sizes records `int(math.sqrt(x.shape[-2]))` (vit_pytorch's RvT) as a call to it."""
    assert torch.sym_sqrt.__name__ == "_sym_sqrt"
    assert DEFAULT_POLICY.resolve_function("torch.sym_sqrt") is torch.sym_sqrt
    with pytest.raises(TargetError, match="private"):
        DEFAULT_POLICY.resolve_function("torch._sym_sqrt")
