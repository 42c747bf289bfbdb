"""synccheck of a MIX launch's cross-core flags at its end: sets no wait took (ErrorSync3).

Each instance's cross_core_set_flag / cross_core_wait_flag calls are counted with the rules of
CrossCoreSetFlag on Atlas A2 (docs/sanitizer.md):
  mode 0: once every core of the setter's kind has set the id, each of them gets +1;
  mode 1: once every AIV of the setter's group has set it, each of those AIVs gets +1;
  mode 2: an AIC's set gives each AIV of its group +1; once every AIV of the group has set it,
          the group's AIC gets +1.
A counter still above 0 when the launch ends, or a set whose round the other cores never
completed, is a set left pending: the next kernel on those cores would start with it. A wait no
set releases is found while the kernel runs (the launch's deadlock check, a fault).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .report import Finding


@dataclass
class Instance:
    role: str                   # "AIC" / "AIV"
    group: int
    label: str                  # aic(0), aiv(1)
    sets: list = field(default_factory=list)     # (flag id, mode, line)
    waits: list = field(default_factory=list)    # (flag id, line)


def pending_sets(kernel: str, instances: list, where) -> list:
    """Findings for the sets of `instances` (one launch) left pending; where(line) -> (file,
    line)."""
    found = []
    flags = sorted({f for i in instances for f, _, _ in i.sets})
    for flag in flags:
        gain = {id(i): [] for i in instances}        # lines of the sets that reached instance i
        for mode in (0, 1, 2):
            for setters, receivers in _rounds(instances, mode):
                counts = [[ln for f, m, ln in i.sets if f == flag and m == mode]
                          for i in setters]
                if not setters or not any(counts):
                    continue
                if mode == 2 and setters[0].role == "AIC":      # each set reaches every AIV
                    for r in receivers:
                        gain[id(r)] += counts[0]
                    continue
                done = min(len(c) for c in counts)
                for r in receivers:
                    gain[id(r)] += counts[0][:done]
                for i, c in zip(setters, counts):
                    for ln in c[done:]:
                        found.append(Finding(
                            "Sync3", "cross_core_set_flag whose round never completes", kernel,
                            i.label, where(ln), detail=f"cross_core_set_flag(flag_id={flag}, "
                            f"mode_id={mode}) waits for a set of every core it pairs with; "
                            f"not all of them set it before the launch ended"))
        for i in instances:
            waits = sum(1 for f, _ in i.waits if f == flag)
            lines = gain[id(i)]
            if len(lines) > waits:
                found.append(Finding(
                    "Sync3", "cross_core_set_flag without its cross_core_wait_flag", kernel,
                    i.label, where(lines[-1]), detail=f"{len(lines) - waits} set(s) of flag_id="
                    f"{flag} for {i.label} never waited for before the launch ended"))
    return found


def _rounds(instances, mode):
    """(setters, receivers) pairs of `mode`: who must set for a round, and who gains from it."""
    groups = sorted({i.group for i in instances})
    aic = {i.group: i for i in instances if i.role == "AIC"}
    aivs = {g: [i for i in instances if i.role == "AIV" and i.group == g] for g in groups}
    if mode == 0:
        for kind in ("AIC", "AIV"):
            cores = [i for i in instances if i.role == kind]
            yield cores, cores
    elif mode == 1:
        for g in groups:
            yield aivs[g], aivs[g]
    else:
        for g in groups:
            if g in aic:
                yield [aic[g]], aivs[g]
                yield aivs[g], [aic[g]]
