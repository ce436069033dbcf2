"""The dashboard's activity chart, laid out on the server as plain SVG numbers (no JS, no CDN)."""

from __future__ import annotations

from dataclasses import dataclass

from streams.records.activity import ActivityDay

WIDTH = 720
HEIGHT = 180
LEFT = 40  # room for the y-axis labels
BOTTOM = 22  # room for the date labels
TOP = 10


@dataclass(frozen=True)
class Bar:
    x: float
    width: float
    obs_y: float
    obs_h: float
    cons_x: float
    cons_y: float
    cons_h: float
    label: str  # the tooltip
    tick: str | None  # a date under the axis, every week


@dataclass(frozen=True)
class Chart:
    width: int
    height: int
    left: int
    base_y: float
    top: int
    y_max: int
    bars: list[Bar]
    total_observations: int
    total_consolidations: int


def activity_chart(days: list[ActivityDay]) -> Chart:
    """Grouped bars per day: observations (left) and consolidations (right), one scale."""
    peak = max([1, *(d.observations for d in days), *(d.consolidations for d in days)])
    y_max = _nice(peak)
    plot_h = HEIGHT - BOTTOM - TOP
    base = HEIGHT - BOTTOM
    step = (WIDTH - LEFT) / max(len(days), 1)
    bar_w = max(step * 0.38, 1.0)
    bars = []
    for i, day in enumerate(days):
        obs_h = plot_h * day.observations / y_max
        cons_h = plot_h * day.consolidations / y_max
        x = LEFT + i * step + step * 0.1
        bars.append(
            Bar(
                x=round(x, 1),
                width=round(bar_w, 1),
                obs_y=round(base - obs_h, 1),
                obs_h=round(obs_h, 1),
                cons_x=round(x + bar_w, 1),
                cons_y=round(base - cons_h, 1),
                cons_h=round(cons_h, 1),
                label=f"{day.day.isoformat()}: {day.observations} observations, "
                f"{day.consolidations} consolidations",
                tick=day.day.strftime("%b %d") if i % 7 == 0 else None,
            )
        )
    return Chart(
        width=WIDTH,
        height=HEIGHT,
        left=LEFT,
        base_y=base,
        top=TOP,
        y_max=y_max,
        bars=bars,
        total_observations=sum(d.observations for d in days),
        total_consolidations=sum(d.consolidations for d in days),
    )


def _nice(value: int) -> int:
    """The smallest 1, 2 or 5 times a power of ten at or above `value`."""
    magnitude = 1
    while True:
        for factor in (1, 2, 5):
            if factor * magnitude >= value:
                return factor * magnitude
        magnitude *= 10
