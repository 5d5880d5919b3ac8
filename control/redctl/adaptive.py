"""Adaptive RED (Floyd, Gummadi & Shenker 2001): retune maxp every 0.5 s so
that the average queue stays in the middle of [minth, maxth]."""
from __future__ import annotations

import dataclasses
import time
from typing import Callable

from .convert import RedConfig
from .p4rt import P4RuntimeError

INTERVAL_S = 0.5
BAND = (0.4, 0.6)          # target band, as fractions of maxth - minth above minth
MAXP_CEILING = 0.5         # only increase while maxp <= 0.5
MAXP_FLOOR = 0.01          # only decrease while maxp >= 0.01
BETA = 0.9                 # multiplicative decrease


def target_band(cfg: RedConfig) -> tuple[float, float]:
    width = cfg.maxth - cfg.minth
    return cfg.minth + BAND[0] * width, cfg.minth + BAND[1] * width


def adapt_maxp(cfg: RedConfig, avg: float) -> float:
    """The paper's rule: additive increase above the band, multiplicative
    decrease below it, unchanged inside it."""
    low, high = target_band(cfg)
    if avg > high and cfg.maxp <= MAXP_CEILING:
        return cfg.maxp + min(0.01, cfg.maxp / 4)
    if avg < low and cfg.maxp >= MAXP_FLOOR:
        return cfg.maxp * BETA
    return cfg.maxp


def run(ctl, port: int, duration_s: float | None = None,
        report: Callable[[float, float, float], None] | None = None) -> RedConfig:
    """Every INTERVAL_S, take the latest telemetry average of `port` and
    install the adapted maxp; needs RED and sampling set on the port.
    report(t, avg, maxp) is called after each step. Returns the final config."""
    cfg = ctl.get_red(port)
    if cfg is None or cfg.mode != "red":
        raise ValueError(f"port {port} does not run RED; configure it with `redctl set` first")
    start = time.monotonic()
    step_end = start + INTERVAL_S
    while duration_s is None or step_end - start <= duration_s + 1e-9:
        latest = _latest_avg(ctl, port, step_end)
        if latest is not None:
            new_maxp = round(adapt_maxp(cfg, latest), 9)
            if new_maxp != cfg.maxp:
                cfg = dataclasses.replace(cfg, maxp=new_maxp)
                ctl.set_red(port, cfg)
            if report:
                report(step_end - start, latest, cfg.maxp)
        step_end += INTERVAL_S
    return cfg


def _latest_avg(ctl, port: int, until: float) -> float | None:
    """The last average reported for `port` before the monotonic time `until`."""
    latest = None
    while (remaining := until - time.monotonic()) > 0:
        sample = ctl.poll_sample(remaining)
        if sample is None and time.monotonic() < until:
            raise P4RuntimeError("telemetry stream closed by the switch")
        if sample is not None and sample.port == port:
            latest = sample.avg
    return latest
