"""Hand-written PyTorch models with the structure of the format-2 examples in model_specs/:
what a person would write without fxgen (torchvision's ResNet layout, a ViT, milesial's U-Net, a
width-multiplied network).
``tests/test_examples_reference.py`` loads their checkpoints strictly into what fxgen builds
and generates from the specs, and compares outputs bit for bit."""

from __future__ import annotations

import math

import torch
from torch import nn


class BasicBlock(nn.Module):
    def __init__(self, inplanes: int, planes: int, stride: int = 1) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(planes, planes, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample: nn.Module | None = None
        if stride != 1 or inplanes != planes:
            self.downsample = nn.Sequential(
                nn.Conv2d(inplanes, planes, 1, stride=stride, bias=False), nn.BatchNorm2d(planes)
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        out += identity
        return self.relu(out)


class ResNet(nn.Module):
    def __init__(self, layers: tuple[int, int, int, int] = (2, 2, 2, 2), num_classes: int = 1000, width: int = 64) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, width, 7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        widths = [width, width * 2, width * 4, width * 8]
        inplanes = width
        for i, (planes, blocks) in enumerate(zip(widths, layers, strict=True)):
            stride = 1 if i == 0 else 2
            stage = [BasicBlock(inplanes, planes, stride)] + [BasicBlock(planes, planes) for _ in range(blocks - 1)]
            setattr(self, f"layer{i + 1}", nn.Sequential(*stage))
            inplanes = planes
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(width * 8, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


class EncoderBlock(nn.Module):
    def __init__(self, dim: int, heads: int, mlp_dim: int) -> None:
        super().__init__()
        self.ln_1 = nn.LayerNorm(dim, eps=1e-6)
        self.self_attention = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.ln_2 = nn.LayerNorm(dim, eps=1e-6)
        self.mlp = nn.Sequential(nn.Linear(dim, mlp_dim), nn.GELU(), nn.Linear(mlp_dim, dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.ln_1(x)
        x = x + self.self_attention(h, h, h, need_weights=False)[0]
        return x + self.mlp(self.ln_2(x))


class ViT(nn.Module):
    def __init__(self, image_size: int, patch_size: int, dim: int, depth: int, heads: int, mlp_dim: int,
                 num_classes: int) -> None:  # fmt: skip
        super().__init__()
        self.conv_proj = nn.Conv2d(3, dim, kernel_size=patch_size, stride=patch_size)
        self.encoder = nn.Sequential(*[EncoderBlock(dim, heads, mlp_dim) for _ in range(depth)])
        self.ln = nn.LayerNorm(dim, eps=1e-6)
        self.head = nn.Linear(dim, num_classes)
        self.class_token = nn.Parameter(torch.zeros(1, 1, dim))
        self.pos_embedding = nn.Parameter(torch.randn(1, (image_size // patch_size) ** 2 + 1, dim) * 0.02)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        tokens = self.conv_proj(x).flatten(2).transpose(1, 2)
        cls = self.class_token.expand(x.size(0), -1, -1)
        h = torch.cat([cls, tokens], dim=1) + self.pos_embedding
        return self.head(self.ln(self.encoder(h))[:, 0])


class DoubleConv(nn.Module):
    def __init__(self, cin: int, cout: int) -> None:
        super().__init__()
        self.double_conv = nn.Sequential(
            nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True),
            nn.Conv2d(cout, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True),
        )  # fmt: skip

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.double_conv(x)


class Down(nn.Module):
    def __init__(self, cin: int, cout: int) -> None:
        super().__init__()
        self.maxpool_conv = nn.Sequential(nn.MaxPool2d(2), DoubleConv(cin, cout))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.maxpool_conv(x)


class Up(nn.Module):
    def __init__(self, cin: int, cout: int) -> None:
        super().__init__()
        self.up = nn.ConvTranspose2d(cin, cin // 2, kernel_size=2, stride=2)
        self.conv = DoubleConv(cin, cout)

    def forward(self, x: torch.Tensor, skip: torch.Tensor) -> torch.Tensor:
        return self.conv(torch.cat([skip, self.up(x)], dim=1))


class UNet(nn.Module):
    def __init__(self, in_channels: int, num_classes: int, base: int) -> None:
        super().__init__()
        self.inc = DoubleConv(in_channels, base)
        self.down1, self.down2 = Down(base, base * 2), Down(base * 2, base * 4)
        self.down3, self.down4 = Down(base * 4, base * 8), Down(base * 8, base * 16)
        self.up1, self.up2 = Up(base * 16, base * 8), Up(base * 8, base * 4)
        self.up3, self.up4 = Up(base * 4, base * 2), Up(base * 2, base)
        self.outc = nn.Conv2d(base, num_classes, kernel_size=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x1 = self.inc(x)
        x2 = self.down1(x1)
        x3 = self.down2(x2)
        x4 = self.down3(x3)
        x5 = self.down4(x4)
        x = self.up2(self.up1(x5, x4), x3)
        return self.outc(self.up4(self.up3(x, x2), x1))


def _make_divisible(v: float, divisor: int = 8) -> int:
    """torchvision.models._utils._make_divisible."""
    new_v = max(divisor, int(v + divisor / 2) // divisor * divisor)
    if new_v < 0.9 * v:
        new_v += divisor
    return new_v


class ConvBNAct(nn.Sequential):
    def __init__(self, cin: int, cout: int, stride: int = 1) -> None:
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(cout)
        self.act = nn.ReLU6(inplace=True)


class WidthNet(nn.Module):
    """model_specs/width_net.yaml: torchvision's channel rounding, Ultralytics' depth and
    max-channel rules, as their authors write them."""

    def __init__(self, width: float = 1.0, depth: float = 1.0, max_channels: int = 96, num_classes: int = 10) -> None:
        super().__init__()
        stem, body = _make_divisible(16 * width), _make_divisible(40 * width)
        hidden = math.ceil(min(128, max_channels) * width / 8) * 8
        self.stem = ConvBNAct(3, stem, stride=2)
        self.down = ConvBNAct(stem, body, stride=2)
        self.body = nn.Sequential(*[ConvBNAct(body, body) for _ in range(max(round(3 * depth), 1))])
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(body, hidden)
        self.act = nn.ReLU6()
        self.head = nn.Linear(hidden, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.pool(self.body(self.down(self.stem(x))))
        return self.head(self.act(self.fc(torch.flatten(x, 1))))


class InvertedResidual(nn.Module):
    """torchvision's MobileNetV2 block: the input is added back when the stride is 1 and the widths match."""

    def __init__(self, cin: int, cout: int, stride: int = 1, expand: int = 4) -> None:
        super().__init__()
        hidden = cin * expand
        self.use_res = stride == 1 and cin == cout
        self.conv = nn.Sequential(
            nn.Conv2d(cin, hidden, 1, bias=False), nn.BatchNorm2d(hidden), nn.ReLU6(inplace=True),
            nn.Conv2d(hidden, hidden, 3, stride, 1, groups=hidden, bias=False), nn.BatchNorm2d(hidden),
            nn.ReLU6(inplace=True), nn.Conv2d(hidden, cout, 1, bias=False), nn.BatchNorm2d(cout),
        )  # fmt: skip

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.conv(x) if self.use_res else self.conv(x)


class Bottleneck(nn.Module):
    def __init__(self, c: int, shortcut: bool = True) -> None:
        super().__init__()
        self.cv1, self.act, self.cv2 = nn.Conv2d(c, c, 3, padding=1), nn.SiLU(), nn.Conv2d(c, c, 3, padding=1)
        self.add = shortcut

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.cv2(self.act(self.cv1(x)))
        return x + y if self.add else y


class C2f(nn.Module):
    """Ultralytics' C2f, as it is written there."""

    def __init__(self, c1: int, c2: int, n: int = 1, shortcut: bool = False) -> None:
        super().__init__()
        self.c = c2 // 2
        self.cv1 = nn.Conv2d(c1, 2 * self.c, 1)
        self.cv2 = nn.Conv2d((2 + n) * self.c, c2, 1)
        self.m = nn.ModuleList(Bottleneck(self.c, shortcut) for _ in range(n))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = list(self.cv1(x).chunk(2, 1))
        y.extend(m(y[-1]) for m in self.m)
        return self.cv2(torch.cat(y, 1))


class FamilyNet(nn.Module):
    """model_specs/family_net.yaml: blocks whose graphs depend on their arguments."""

    def __init__(self, width: int = 16, n: int = 2, num_classes: int = 10) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, width, 3, stride=2, padding=1)
        self.ir1 = InvertedResidual(width, width)
        self.ir2 = InvertedResidual(width, 2 * width, stride=2)
        self.c2f = C2f(2 * width, 2 * width, n=n, shortcut=True)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(2 * width, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.c2f(self.ir2(self.ir1(self.stem(x))))
        return self.fc(torch.flatten(self.pool(x), 1))
