"""The apt layer: the final state's packages against the base, pinned (and hashed when
apt's indexes described them in the live container)."""

from __future__ import annotations

import re

from synth.distill.common import pkg_name
from synth.distill.load import LoadedRun
from synth.formats.plan import AptPlan


def snapshot_timestamp(iso: str | None) -> str | None:
    """``2026-11-29T10:16:40Z`` -> ``20261129T101640Z`` (snapshot.debian.org's form)."""
    m = re.match(r"^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)", iso or "")
    return "{}{}{}T{}{}{}Z".format(*m.groups()) if m else None


def apt_plan(run: LoadedRun) -> AptPlan:
    pins = dict(run.apt.added)
    for name, (_old, new) in run.apt.changed.items():
        pins[name] = new
    manual = {pkg_name(m) for m in run.apt.manual}
    auto = sorted(n for n in pins if pkg_name(n) not in manual)
    debs = tuple(d for n, v in sorted(pins.items())
                 if (d := run.apt.deb(n)) is not None and d.version == v)
    hashed = {d.name for d in debs}
    return AptPlan(pins=tuple(sorted(pins.items())), auto=tuple(auto),
                   remove=tuple(sorted(run.apt.removed)), debs=debs,
                   unhashed=tuple((n, v) for n, v in sorted(pins.items()) if n not in hashed),
                   timestamp=snapshot_timestamp(run.info.ended))
