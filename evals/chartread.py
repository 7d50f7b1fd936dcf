"""Values read back from a pygal line chart's geometry (pure): a long series is drawn without its
values printed, so each point's height is turned back into a value by the y axis's own labelled
guides, and the points are compared with the expected values one by one, in order.
"""

from __future__ import annotations

import re

# A horizontal guide of the y axis and its label: <g class="guides"><path d="M0 353.39 h712" …/>
# <text …>7</text>; the label is printed as the chart prints values (1,000 grouped).
_GUIDE = re.compile(
    r'<g class="guides"><path d="M[-\d.]+ ([-\d.]+) h[\d.]+"[^>]*/>\s*<text[^>]*>([^<]*)</text>'
)
# A series' line: "M x y L x y x y …" (a gap in the data starts a new path).
_LINE = re.compile(r'<path d="M([^"]+)" class="line reactive nofill"')
_VALUE = re.compile(r"-?\d+(?:\.\d+)?")
TOLERANCE = 0.002  # of the axis span: a pixel's rounding is far less, a wrong value far more


def y_scale(svg: str) -> tuple[float, float, float] | None:
    """(slope, intercept, span) turning a height into a value, from the labelled y guides."""
    guides: dict[float, float] = {}
    for match in _GUIDE.finditer(svg):
        label = match[2].replace(",", "").strip()
        if _VALUE.fullmatch(label):
            guides[float(match[1])] = float(label)
    if len(guides) < 2:
        return None
    (y0, v0), (y1, v1) = min(guides.items()), max(guides.items())
    slope = (v1 - v0) / (y1 - y0)
    return slope, v0 - slope * y0, max(guides.values()) - min(guides.values())


def plotted(svg: str) -> list[float]:
    """Every point of the chart's lines as a value, series after series (empty: not a pygal
    line chart with a labelled y axis)."""
    scale = y_scale(svg)
    if scale is None:
        return []
    slope, intercept, _span = scale
    values: list[float] = []
    for match in _LINE.finditer(svg):
        numbers = [float(n) for n in re.findall(r"-?\d+(?:\.\d+)?", match[1])]
        values += [slope * y + intercept for y in numbers[1::2]]
    return values


def matched(svg: str, expected: list[float]) -> int:
    """How many expected values the chart's points show, point by point in the same order
    (0 when the chart has another number of points: it is another series)."""
    points, scale = plotted(svg), y_scale(svg)
    if scale is None or len(points) != len(expected):
        return 0
    tolerance = TOLERANCE * scale[2]
    pairs = zip(points, expected, strict=True)
    return sum(abs(point - value) <= tolerance for point, value in pairs)
