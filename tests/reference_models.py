"""Hand-written PyTorch models with the structure of the format-2 examples in model_specs/:
what a person would write without fxgen (torchvision's ResNet layout, a ViT, milesial's U-Net, a
width-multiplied network).
``tests/test_examples_reference.py`` loads their checkpoints strictly into what fxgen builds
and generates from the specs, and compares outputs bit for bit."""

from __future__ import annotations

import math
from typing import Any, ClassVar

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


# -- torchvision's MobileNetV2 (torchvision/models/mobilenetv2.py), its model part as written there --
class Conv2dNormActivation(nn.Sequential):
    """torchvision.ops.misc.Conv2dNormActivation with MobileNetV2's batch norm and ReLU6."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int = 3, stride: int = 1, groups: int = 1) -> None:
        padding = (kernel_size - 1) // 2
        super().__init__(
            nn.Conv2d(in_channels, out_channels, kernel_size, stride, padding, groups=groups, bias=False),
            nn.BatchNorm2d(out_channels), nn.ReLU6(inplace=True),
        )  # fmt: skip
        self.out_channels = out_channels


class MobileNetV2InvertedResidual(nn.Module):
    """torchvision.models.mobilenetv2.InvertedResidual."""

    def __init__(self, inp: int, oup: int, stride: int, expand_ratio: int) -> None:
        super().__init__()
        self.stride = stride
        hidden_dim = round(inp * expand_ratio)  # torchvision: int(round(...))
        self.use_res_connect = self.stride == 1 and inp == oup
        layers: list[nn.Module] = []
        if expand_ratio != 1:
            layers.append(Conv2dNormActivation(inp, hidden_dim, kernel_size=1))  # pw
        layers.extend([
            Conv2dNormActivation(hidden_dim, hidden_dim, stride=stride, groups=hidden_dim),  # dw
            nn.Conv2d(hidden_dim, oup, 1, 1, 0, bias=False),  # pw-linear
            nn.BatchNorm2d(oup),
        ])  # fmt: skip
        self.conv = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.use_res_connect:
            return x + self.conv(x)
        return self.conv(x)  # type: ignore[no-any-return]


class MobileNetV2(nn.Module):
    """torchvision.models.MobileNetV2 (model_specs/mobilenet_v2.yaml), its default settings."""

    def __init__(self, num_classes: int = 1000, width_mult: float = 1.0, round_nearest: int = 8, dropout: float = 0.2) -> None:
        super().__init__()
        input_channel = 32
        last_channel = 1280
        inverted_residual_setting = [
            # t, c, n, s
            [1, 16, 1, 1],
            [6, 24, 2, 2],
            [6, 32, 3, 2],
            [6, 64, 4, 2],
            [6, 96, 3, 1],
            [6, 160, 3, 2],
            [6, 320, 1, 1],
        ]
        input_channel = _make_divisible(input_channel * width_mult, round_nearest)
        self.last_channel = _make_divisible(last_channel * max(1.0, width_mult), round_nearest)
        features: list[nn.Module] = [Conv2dNormActivation(3, input_channel, stride=2)]
        for t, c, n, s in inverted_residual_setting:
            output_channel = _make_divisible(c * width_mult, round_nearest)
            for i in range(n):
                stride = s if i == 0 else 1
                features.append(MobileNetV2InvertedResidual(input_channel, output_channel, stride, expand_ratio=t))
                input_channel = output_channel
        features.append(Conv2dNormActivation(input_channel, self.last_channel, kernel_size=1))
        self.features = nn.Sequential(*features)
        self.classifier = nn.Sequential(nn.Dropout(p=dropout), nn.Linear(self.last_channel, num_classes))
        for m in self.modules():  # weight initialization
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out")
                if m.bias is not None:
                    nn.init.zeros_(m.bias)
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.ones_(m.weight)
                nn.init.zeros_(m.bias)
            elif isinstance(m, nn.Linear):
                nn.init.normal_(m.weight, 0, 0.01)
                nn.init.zeros_(m.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.features(x)
        x = nn.functional.adaptive_avg_pool2d(x, (1, 1))
        x = torch.flatten(x, 1)
        return self.classifier(x)  # type: ignore[no-any-return]


# -- Ultralytics' YOLOv8 (ultralytics/nn/modules/{conv,block,head}.py, cfg/models/v8/yolov8.yaml and
# parse_model in ultralytics/nn/tasks.py), the modules as written there --------------------------
YOLOV8_SCALES = {  # depth, width, max_channels (yolov8.yaml's `scales`)
    "n": (0.33, 0.25, 1024),
    "s": (0.33, 0.50, 1024),
    "m": (0.67, 0.75, 768),
    "l": (1.00, 1.00, 512),
    "x": (1.00, 1.25, 512),
}


def autopad(k: int, p: int | None = None, d: int = 1) -> int:
    """ultralytics.nn.modules.conv.autopad, for an int kernel: 'same' padding."""
    if d > 1:
        k = d * (k - 1) + 1
    return k // 2 if p is None else p


class YoloConv(nn.Module):
    """ultralytics.nn.modules.conv.Conv: convolution, batch norm, SiLU."""

    default_act = nn.SiLU()

    def __init__(self, c1: int, c2: int, k: int = 1, s: int = 1, p: int | None = None, g: int = 1, d: int = 1) -> None:
        super().__init__()
        self.conv = nn.Conv2d(c1, c2, k, s, autopad(k, p, d), groups=g, dilation=d, bias=False)
        self.bn = nn.BatchNorm2d(c2)
        self.act = self.default_act

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.act(self.bn(self.conv(x)))  # type: ignore[no-any-return]


class YoloBottleneck(nn.Module):
    """ultralytics.nn.modules.block.Bottleneck."""

    def __init__(self, c1: int, c2: int, shortcut: bool = True, g: int = 1, k: tuple[int, int] = (3, 3), e: float = 0.5) -> None:
        super().__init__()
        c_ = int(c2 * e)
        self.cv1 = YoloConv(c1, c_, k[0], 1)
        self.cv2 = YoloConv(c_, c2, k[1], 1, g=g)
        self.add = shortcut and c1 == c2

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.cv2(self.cv1(x)) if self.add else self.cv2(self.cv1(x))  # type: ignore[no-any-return]


class YoloC2f(nn.Module):
    """ultralytics.nn.modules.block.C2f."""

    def __init__(self, c1: int, c2: int, n: int = 1, shortcut: bool = False, g: int = 1, e: float = 0.5) -> None:
        super().__init__()
        self.c = int(c2 * e)
        self.cv1 = YoloConv(c1, 2 * self.c, 1, 1)
        self.cv2 = YoloConv((2 + n) * self.c, c2, 1)
        self.m = nn.ModuleList(YoloBottleneck(self.c, self.c, shortcut, g, k=(3, 3), e=1.0) for _ in range(n))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = list(self.cv1(x).chunk(2, 1))
        y.extend(m(y[-1]) for m in self.m)
        return self.cv2(torch.cat(y, 1))  # type: ignore[no-any-return]


class SPPF(nn.Module):
    """ultralytics.nn.modules.block.SPPF."""

    def __init__(self, c1: int, c2: int, k: int = 5) -> None:
        super().__init__()
        c_ = c1 // 2
        self.cv1 = YoloConv(c1, c_, 1, 1)
        self.cv2 = YoloConv(c_ * 4, c2, 1, 1)
        self.m = nn.MaxPool2d(kernel_size=k, stride=1, padding=k // 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = [self.cv1(x)]
        y.extend(self.m(y[-1]) for _ in range(3))
        return self.cv2(torch.cat(y, 1))  # type: ignore[no-any-return]


class Concat(nn.Module):
    """ultralytics.nn.modules.conv.Concat."""

    def __init__(self, dimension: int = 1) -> None:
        super().__init__()
        self.d = dimension

    def forward(self, x: list[torch.Tensor]) -> torch.Tensor:
        return torch.cat(x, self.d)


class DFL(nn.Module):
    """ultralytics.nn.modules.block.DFL: a fixed 1x1 convolution weighing the 16 bins 0..15."""

    def __init__(self, c1: int = 16) -> None:
        super().__init__()
        self.conv = nn.Conv2d(c1, 1, 1, bias=False).requires_grad_(False)
        x = torch.arange(c1, dtype=torch.float)
        self.conv.weight.data[:] = nn.Parameter(x.view(1, c1, 1, 1))
        self.c1 = c1


class Detect(nn.Module):
    """ultralytics.nn.modules.head.Detect; forward is its training-mode output (the three levels'
    box and class maps, concatenated per level), which is what the spec computes."""

    def __init__(self, nc: int = 80, ch: tuple[int, ...] = ()) -> None:
        super().__init__()
        self.nc = nc
        self.nl = len(ch)
        self.reg_max = 16
        self.no = nc + self.reg_max * 4
        self.stride = torch.zeros(self.nl)
        c2, c3 = max((16, ch[0] // 4, self.reg_max * 4)), max(ch[0], min(self.nc, 100))
        self.cv2 = nn.ModuleList(
            nn.Sequential(YoloConv(x, c2, 3), YoloConv(c2, c2, 3), nn.Conv2d(c2, 4 * self.reg_max, 1)) for x in ch
        )
        self.cv3 = nn.ModuleList(nn.Sequential(YoloConv(x, c3, 3), YoloConv(c3, c3, 3), nn.Conv2d(c3, self.nc, 1)) for x in ch)
        self.dfl = DFL(self.reg_max)

    def forward(self, x: list[torch.Tensor]) -> list[torch.Tensor]:
        for i in range(self.nl):
            x[i] = torch.cat((self.cv2[i](x[i]), self.cv3[i](x[i])), 1)
        return x


def _yolo_divisible(x: float, divisor: int = 8) -> int:
    """ultralytics.utils.ops.make_divisible."""
    return math.ceil(x / divisor) * divisor


class YOLOv8(nn.Module):
    """Ultralytics' DetectionModel built from yolov8.yaml by parse_model, at one of its scales:
    ``model`` is the nn.Sequential of the 23 layers; forward routes their outputs as the yaml's
    `from` column says (Ultralytics' _predict_once)."""

    LAYERS: ClassVar[list[tuple[Any, int, str, list[Any]]]] = [  # from, repeats, module, args (yolov8.yaml's backbone and head)
        (-1, 1, "Conv", [64, 3, 2]), (-1, 1, "Conv", [128, 3, 2]), (-1, 3, "C2f", [128, True]),
        (-1, 1, "Conv", [256, 3, 2]), (-1, 6, "C2f", [256, True]), (-1, 1, "Conv", [512, 3, 2]),
        (-1, 6, "C2f", [512, True]), (-1, 1, "Conv", [1024, 3, 2]), (-1, 3, "C2f", [1024, True]),
        (-1, 1, "SPPF", [1024, 5]),
        (-1, 1, "Upsample", [None, 2, "nearest"]), ([-1, 6], 1, "Concat", [1]), (-1, 3, "C2f", [512]),
        (-1, 1, "Upsample", [None, 2, "nearest"]), ([-1, 4], 1, "Concat", [1]), (-1, 3, "C2f", [256]),
        (-1, 1, "Conv", [256, 3, 2]), ([-1, 12], 1, "Concat", [1]), (-1, 3, "C2f", [512]),
        (-1, 1, "Conv", [512, 3, 2]), ([-1, 9], 1, "Concat", [1]), (-1, 3, "C2f", [1024]),
        ([15, 18, 21], 1, "Detect", ["nc"]),
    ]  # fmt: skip

    def __init__(self, scale: str = "n", nc: int = 80) -> None:
        super().__init__()
        depth, width, max_channels = YOLOV8_SCALES[scale]
        ch = [3]
        layers: list[nn.Module] = []
        self.froms: list[int | list[int]] = []
        for i, (f, n, name, args) in enumerate(self.LAYERS):
            n = max(round(n * depth), 1) if n > 1 else n
            if name in ("Conv", "C2f", "SPPF"):
                c1, c2 = ch[f], args[0]  # type: ignore[index]
                c2 = _yolo_divisible(min(c2, max_channels) * width, 8)
                args = [c1, c2, *args[1:]]
                if name == "C2f":
                    args.insert(2, n)
                    n = 1
                module: nn.Module = {"Conv": YoloConv, "C2f": YoloC2f, "SPPF": SPPF}[name](*args)
            elif name == "Upsample":
                module, c2 = nn.Upsample(*args), ch[f]  # type: ignore[arg-type, index]
            elif name == "Concat":
                module, c2 = Concat(*args), sum(ch[x] for x in f)  # type: ignore[union-attr]
            else:
                module, c2 = Detect(nc, tuple(ch[x] for x in f)), 0  # type: ignore[union-attr]
            layers.append(module)
            self.froms.append(f)  # type: ignore[arg-type]
            if i == 0:
                ch = []
            ch.append(c2)
        self.model = nn.Sequential(*layers)
        for m in self.modules():  # ultralytics.utils.torch_utils.initialize_weights
            if isinstance(m, nn.BatchNorm2d):
                m.eps = 1e-3
                m.momentum = 0.03

    def forward(self, x: torch.Tensor) -> list[torch.Tensor]:
        y: list[torch.Tensor] = []
        for m, f in zip(self.model, self.froms, strict=True):
            if f != -1:
                x = y[f] if isinstance(f, int) else [x if j == -1 else y[j] for j in f]  # type: ignore[assignment]
            x = m(x)
            y.append(x)
        return x  # type: ignore[return-value]
