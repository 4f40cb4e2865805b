"""The generated import block is sorted the way ``ruff check`` (default rules: isort's I001)
wants it, for any mix of modules and names: a person running ruff on a generated file sees
nothing to fix. Checked against ruff itself rather than a copy of its rules."""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

from fxgen.codegen.render import Imports

_PARTS = ["a", "A", "a1", "a2", "a10", "b_c", "B_C", "mod", "Mod", "MOD", "m2x", "x", "X", "torch", "zz"]
_STDLIB = ["typing", "base64", "zlib", "sys", "operator", "math", "collections"]
_FROM_STDLIB = [("collections", "OrderedDict"), ("collections.abc", "Mapping"), ("enum", "Enum")]


def _imports(rng: random.Random) -> Imports:
    imports = Imports(torch=rng.random() < 0.5, functional=rng.random() < 0.5)
    imports.stdlib |= set(rng.sample(_STDLIB, rng.randint(0, 3)))
    if rng.random() < 0.3:
        imports.torch_modules |= set(rng.sample(["torch.fx", "torch.utils.checkpoint", "torch.nn.init"], 2))
    for module, attribute in rng.sample(_FROM_STDLIB, rng.randint(0, 2)):
        imports.aliases[(module, attribute)] = attribute
    for _ in range(rng.randint(0, 6)):
        module = ".".join(rng.choice(_PARTS) for _ in range(rng.randint(1, 3)))
        attribute = rng.choice(_PARTS)
        if (module, attribute) in imports.aliases:
            continue
        alias = attribute if rng.random() < 0.7 else f"{module}_{attribute}".replace(".", "_")
        imports.aliases[(module, attribute)] = alias
    return imports


def test_ruff_finds_nothing_to_sort(tmp_path: Path) -> None:
    rng = random.Random(0)
    files = []
    for i in range(200):
        path = tmp_path / f"case_{i}.py"
        path.write_text("\n".join(_imports(rng).lines()) + "\n")
        files.append(str(path))
    ruff = subprocess.run([sys.executable, "-m", "ruff", "check", "--isolated", "--select", "I",
                           "--output-format", "concise", *files], capture_output=True, text=True)  # fmt: skip
    assert ruff.returncode == 0, ruff.stdout + ruff.stderr


def test_names_from_one_module_share_a_statement() -> None:
    imports = Imports()
    imports.aliases[("einops.layers.torch", "Reduce")] = "Reduce"
    imports.aliases[("einops.layers.torch", "Rearrange")] = "Rearrange"
    imports.aliases[("monai.blocks", "UpCat")] = "monai_blocks_UpCat"
    assert imports.lines() == [
        "from einops.layers.torch import Rearrange, Reduce",
        "from monai.blocks import UpCat as monai_blocks_UpCat",
        "from torch import nn",
    ]


def test_a_file_importing_another_package_tells_mypy_it_may_be_untyped() -> None:
    """mypy's default settings refuse an import from a package without type information
    (transformers ships none); the file says so once, whatever is installed where it is made."""
    from fxgen.codegen.render import UNTYPED_IMPORTS, imports_other_packages

    imports = Imports(torch=True)
    imports.aliases[("collections", "OrderedDict")] = "OrderedDict"
    assert not imports_other_packages(imports)
    imports.aliases[("transformers.models.gptj.modeling_gptj", "get_embed_positions")] = "get_embed_positions"
    assert imports_other_packages(imports)
    assert UNTYPED_IMPORTS == '# mypy: disable-error-code="import-untyped"'
