#!/usr/bin/env bash
# Install every library the model zoo (bench/zoo/) builds models from, at the versions the
# survey (bench/zoo_survey.py) was run with. Run from the repository root:
#
#     bash bench/install_zoo.sh                 # the pinned versions, into the active Python
#     bash bench/install_zoo.sh --current DIR   # a second environment: the newest releases
#
# --current makes (or updates) the virtual environment DIR with fxgen's own dependencies and
# the newest release of every zoo library that installs with torch 2.13.0: transformers 5.x,
# whose models the zoo captures with TorchDynamo (hf_decoders, hf_encoders), where the pinned
# set keeps transformers 4.46.3 for HFTracer (hf_models). The two cannot share one environment.
# Run the report there: DIR/bin/python bench/zoo_report.py --environment current.
#
# Idempotent: pinned packages that are already installed are left alone. Every install passes
# -c constraints.txt (torch==2.13.0, the CPU build) and is dry-run first: the script stops if pip
# would install or change torch, torchvision or torchaudio (there is no CPU build of the last
# two here, and an unpinned torch pulls several GB of CUDA wheels). A library whose newest
# release needs another torch gets its newest release that works with 2.13.0 (pip's resolver
# picks it under the constraint); the versions installed are printed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
export PIP_DISABLE_PIP_VERSION_CHECK=1

CURRENT=""
if [[ "${1:-}" == "--current" ]]; then
    CURRENT="${2:?usage: bash bench/install_zoo.sh [--current DIR]}"
    [[ -x "$CURRENT/bin/python" ]] || python3 -m venv "$CURRENT"
    # shellcheck disable=SC1091
    source "$CURRENT/bin/activate"
elif [[ $# -gt 0 ]]; then
    echo "usage: bash bench/install_zoo.sh [--current DIR]" >&2
    exit 2
fi

# With --current, --upgrade: a package installed before is brought to its newest release.
UPGRADE=()
[[ -z "$CURRENT" ]] || UPGRADE=(--upgrade)
PIP=(python -m pip install -q -c constraints.txt "${UPGRADE[@]}")

# pip install "$@" after a dry run shows it would not touch torch/torchvision/torchaudio.
install() {
    local plan
    plan=$(python -m pip install --dry-run -c constraints.txt "${UPGRADE[@]}" "$@" 2>&1) || {
        echo "$plan" >&2
        exit 1
    }
    if grep -E '^Would install' <<<"$plan" | tr ' ' '\n' | grep -qiE '^(torch|torchvision|torchaudio)-[0-9]'; then
        echo "refusing: 'pip install $*' would install torch/torchvision/torchaudio:" >&2
        grep -E '^Would install' <<<"$plan" >&2
        exit 1
    fi
    "${PIP[@]}" "$@"
}

# The packages as pinned, or with --current their names alone (then the newest releases).
pin() {
    if [[ -n "$CURRENT" ]]; then
        printf '%s\n' "${@%%==*}"
    else
        printf '%s\n' "$@"
    fi
}

if [[ -n "$CURRENT" ]]; then
    # torch exactly as constraints.txt pins it (the CPU build) before anything can ask for
    # another; then fxgen's own dependencies (the report imports fxgen from this checkout).
    "${PIP[@]}" torch
    install -e .
    install transformers tokenizers huggingface-hub
fi

# MONAI and the three small zoos of the original catalogue (zoo/monai_models.py,
# zoo/misc_models.py); einops is also what vit-pytorch and the lucidrains libraries need.
install $(pin monai==1.6.1 einops==0.8.2 efficientnet-pytorch==0.7.1 rtdl-revisiting-models==0.0.2 \
    mlp-mixer-pytorch==0.3.1)

# Hugging Face transformers 4.46.3 (zoo/hf_models.py): the last 4.x whose HFTracer traces
# ViT/GPT-2/Llama & co.; 4.5x wraps forward in check_model_inputs(**kwargs), which it cannot.
# With --current: its newest release instead (above).
[[ -n "$CURRENT" ]] || install transformers==4.46.3 tokenizers==0.20.3 huggingface-hub==0.36.2

# pytorchcv (zoo/pytorchcv_models.py): --no-deps because it declares torchvision as a
# dependency; only its ProPainter models import it (the zoo imports model modules directly,
# never pytorchcv.model_provider). Its real dependencies are numpy and requests.
install numpy requests
install --no-deps $(pin pytorchcv==0.0.74)

# vit-pytorch (zoo/vit_pytorch_models.py): --no-deps because it declares torchvision, which
# only its trainers (DINO, EsViT, LeJEPA, ...) import; the models need torch and einops only.
install --no-deps $(pin vit-pytorch==1.26.11)

# x-transformers and kornia (zoo/x_transformers_models.py, zoo/kornia_models.py).
install $(pin x-transformers==2.31.10 kornia==0.9.0)

# Single-file libraries (zoo/lucidrains_models.py); hyper-connections is also what
# vit-pytorch's SimpleViT[hyper-connections] imports.
install $(pin perceiver-pytorch==0.11.0 linformer==0.2.3 performer-pytorch==1.1.4 \
    g-mlp-pytorch==0.1.5 res-mlp-pytorch==0.0.6 nystrom-attention==0.0.14 conformer==0.3.2 \
    lambda-networks==0.4.0 hyper-connections==0.4.11)

python - <<'EOF'
import importlib.util

import torch

assert torch.__version__.startswith("2.13.0"), torch.__version__
for name in ("torchvision", "torchaudio"):
    assert importlib.util.find_spec(name) is None, f"{name} is installed"
print(f"zoo libraries installed (torch {torch.__version__}, no torchvision/torchaudio)")
EOF
python -m pip list --format=freeze 2>/dev/null |
    grep -iE '^(transformers|monai|kornia|x-transformers|vit-pytorch|pytorchcv|einops|tokenizers)==' || true
