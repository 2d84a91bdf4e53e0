"""What a sweep is: a base scenario, the values of the varied fields, and K seeds per point.

    spec = SweepSpec.from_args("hopper", ["push=0:4:3"], seeds=2, duration_s=3.0)
    spec.episodes            # 6: (push_ns, seed) for push_ns in 0, 2, 4 and seed in 0, 1
    spec.scenario(k)         # episode k's exact Scenario (validated)

Episode k is the k-th element of the product of the varied fields' values (in the order the
fields were given) times the seeds (innermost): the base scenario's seed + 0 .. K-1. A seed
only changes what is random in an episode (sensor noise, launch/model_errors.py): without
noise, the K seeds of a point repeat the same episode.

`--vary FIELD=START:STOP:N` gives N evenly spaced values from START to STOP (both included);
`--vary FIELD=A,B,C` lists them (also for text fields: `--vary plant=ess,mujoco`).
`--set FIELD=VALUE` changes a field for every episode. FIELD is a Scenario field
(launch/scenario.py) or one of the short names in ALIASES (the flags of `launch run`:
push -> push_ns, ...). The spec is saved in the sweep folder's sweep.json; `from_json` reads it
back, so `launch run --from-sweep DIR --episode K` and `launch sweep --resume DIR` rebuild the
same episodes.
"""
from __future__ import annotations

import dataclasses
import itertools
import json
import math
from dataclasses import dataclass, field
from pathlib import Path

from .scenario import Scenario, load_scenario

# short names accepted for --vary and --set (those of `python -m launch run`'s flags)
ALIASES = {"push": "push_ns", "push_at": "push_at_s", "drop": "drop_m",
           "duration": "duration_s", "latency": "command_latency_ticks"}
# fields a sweep may not vary: the name, the seed (--seeds), the mode (sweeps are lockstep), option dicts
NOT_VARIED = ("name", "seed", "mode", "controller_options", "plant_options")
NOT_SET = ("name", "controller_options", "plant_options")
MAX_EPISODES = 1_000_000


def _field_types() -> dict[str, str]:
    return {f.name: str(f.type) for f in dataclasses.fields(Scenario)}


OPTION_TABLES = ("controller_options", "plant_options")  # FIELD may be TABLE.KEY: one option of the table


def resolve_field(name: str, *, what: str, excluded: tuple[str, ...]) -> str:
    """The Scenario field `name` stands for (an alias resolved), or `controller_options.KEY` /
    `plant_options.KEY` as given (one option; the controller checks its name when the scenario
    is validated); ValueError naming the valid ones."""
    table, dot, key = name.partition(".")
    if dot and table in OPTION_TABLES:
        if not key.isidentifier():
            raise ValueError(f"{what}: {name!r}: the option after '{table}.' must be a name, e.g. {table}.vx")
        return name
    types = _field_types()
    fname = ALIASES.get(name, name)
    allowed = [f for f in types if f not in excluded]
    if fname not in types or fname in excluded:
        why = "is not a scenario field" if fname not in types else "cannot be set this way"
        hint = {"seed": " (use --seeds K)", "mode": " (sweeps run lockstep)"}.get(fname, "")
        aliases = ", ".join(f"{a}={f}" for a, f in ALIASES.items() if a != f)
        import difflib

        close = difflib.get_close_matches(name, allowed + [a for a in ALIASES if a != ALIASES[a]], n=1)
        guess = f" Did you mean {close[0]!r}?" if close and fname not in types else ""
        raise ValueError(f"{what}: {name!r} {why}{hint}.{guess} Fields: {', '.join(allowed)} "
                         f"(short names: {aliases}; one controller or plant option: controller_options.KEY, "
                         f"plant_options.KEY)")
    return fname


def _option_value(text: str):
    """An option's value from text as TOML would read it: true/false, a number, [..] or {..} as
    JSON, else the text itself."""
    import json

    text = text.strip()
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    try:
        value = float(text)
        return int(value) if value == int(value) and "." not in text and "e" not in text.lower() else value
    except ValueError:
        pass
    if text[:1] in "[{":
        try:
            return json.loads(text)
        except ValueError:
            pass
    return text


def _kind(fname: str) -> str:
    """The type of a field as text ("float" for an option, whose values are mostly numbers)."""
    return "option" if "." in fname else _field_types()[fname]


def apply_changes(scenario: Scenario, changes: dict) -> Scenario:
    """The scenario with `changes` ({field: value}, a field may be TABLE.KEY: that option of the
    controller_options or plant_options table) applied, not validated."""
    plain = {k: v for k, v in changes.items() if "." not in k}
    tables = {t: dict(getattr(scenario, t)) for t in OPTION_TABLES}
    for name, value in changes.items():
        if "." in name:
            table, _, key = name.partition(".")
            tables[table][key] = value
    nested = {t: d for t, d in tables.items() if d != getattr(scenario, t)}
    return dataclasses.replace(scenario, **plain, **nested)


def _convert(fname: str, text: str, *, what: str):
    """One value of field `fname` from text, typed as the field (int, float, str, float or None;
    an option as `_option_value` reads it)."""
    if "." in fname:
        return _option_value(text)
    kind = _field_types()[fname]
    text = text.strip()
    if "None" in kind and text.lower() in ("none", ""):
        return None
    if kind.startswith("str"):
        return text
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{what}: {fname} takes numbers, got {text!r}") from None
    if not math.isfinite(value):
        raise ValueError(f"{what}: {fname} takes finite numbers, got {text!r}")
    if kind.startswith("int"):
        if value != round(value):
            raise ValueError(f"{what}: {fname} takes whole numbers, got {text!r}")
        return int(round(value))
    return value


def parse_vary(text: str) -> tuple[str, list]:
    """(field, values) of one --vary FIELD=START:STOP:N or FIELD=A,B,... argument; ValueError
    naming the field and the fix."""
    what = f"--vary {text}"
    name, sep, spec = text.partition("=")
    if not sep or not name.strip() or not spec.strip():
        raise ValueError(f"{what}: write FIELD=START:STOP:N (N evenly spaced values) or FIELD=A,B,C")
    fname = resolve_field(name.strip(), what=what, excluded=NOT_VARIED)
    kind = _kind(fname)
    if ":" in spec:
        parts = spec.split(":")
        if len(parts) != 3:
            raise ValueError(f"{what}: START:STOP:N has three parts, got {spec!r}")
        if kind.startswith("str") or kind.startswith("dict"):
            raise ValueError(f"{what}: {fname} is text; list its values: {fname}=A,B")
        try:
            n = int(parts[2])
        except ValueError:
            raise ValueError(f"{what}: N (the number of values) must be a whole number >= 1, got {parts[2]!r}") from None
        if n < 1:
            raise ValueError(f"{what}: N (the number of values) must be >= 1, got {n}")
        start, stop = (_convert(fname, p, what=what) for p in parts[:2])
        if not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in (start, stop)):
            raise ValueError(f"{what}: START and STOP must be numbers")
        raw = [start + (stop - start) * i / (n - 1) for i in range(n)] if n > 1 else [start]
        values = []
        for x in raw:
            if kind.startswith("int"):
                if abs(x - round(x)) > 1e-9:
                    raise ValueError(f"{what}: {fname} takes whole numbers; {start}:{stop}:{n} gives {x:g} "
                                     f"(choose N so that the step is whole, e.g. {start}:{stop}:{abs(stop - start) + 1})")
                values.append(int(round(x)))
            else:
                values.append(float(f"{x:.12g}"))  # 0.30000000000000004 -> 0.3
    else:
        values = [_convert(fname, p, what=what) for p in spec.split(",")]
    if len(set(map(repr, values))) != len(values):
        raise ValueError(f"{what}: the values of {fname} repeat: {values}")
    return fname, values


def parse_set(text: str) -> tuple[str, object]:
    """(field, value) of one --set FIELD=VALUE argument."""
    what = f"--set {text}"
    name, sep, value = text.partition("=")
    if not sep or not name.strip():
        raise ValueError(f"{what}: write FIELD=VALUE")
    fname = resolve_field(name.strip(), what=what, excluded=NOT_SET)
    return fname, _convert(fname, value, what=what)


@dataclass(frozen=True)
class SweepSpec:
    """A sweep: the base scenario (the named one with --duration and --set applied), the varied
    fields' values (in order), and the number of seeds per point."""

    base: Scenario
    vary: dict = field(default_factory=dict)  # field -> list of values
    seeds: int = 1
    source: str = ""  # the scenario as the user named it (a name or a .toml path)

    @classmethod
    def from_args(cls, scenario: str, vary: list[str], *, seeds: int = 1, duration_s: float | None = None,
                  sets: list[str] = ()) -> "SweepSpec":
        """Parse the command line's SCENARIO, --vary, --seeds, --duration and --set; validate
        every episode up front (ValueError naming the episode, field and fix)."""
        base = load_scenario(scenario)
        changes = dict(parse_set(s) for s in sets)
        if duration_s is not None:
            changes["duration_s"] = duration_s
        base = apply_changes(base, changes)
        plan = base.controller_options.get("plan")
        if plan is not None:  # the file the episodes track (the user's or the shipped plan), by its absolute
            from mpc.planning.shipped import resolve_plan  # path: workers may run in another folder

            base = dataclasses.replace(base, controller_options={**base.controller_options,
                                                                 "plan": str(resolve_plan(plan)[0].resolve())})
        varied: dict = {}
        for text in vary:
            fname, values = parse_vary(text)
            if fname in varied:
                raise ValueError(f"--vary {text}: {fname} is varied twice; give it once")
            varied[fname] = values
        return cls(base, varied, seeds, scenario).validate()

    def validate(self) -> "SweepSpec":
        """Raise ValueError for a realtime base, a bad seed count, or any episode whose scenario
        is invalid (naming the episode's values); return self."""
        if isinstance(self.seeds, bool) or not isinstance(self.seeds, int) or self.seeds < 1:
            raise ValueError(f"--seeds must be a whole number >= 1, got {self.seeds!r}")
        if self.base.mode != "lockstep":
            raise ValueError(f"scenario {self.base.name!r} runs {self.base.mode}; sweeps run lockstep (their misses "
                             "and falls must not depend on how busy the machine is): use a lockstep scenario "
                             "or --set mode=lockstep")
        if self.episodes > MAX_EPISODES:
            raise ValueError(f"the sweep has {self.episodes} episodes (over {MAX_EPISODES}); vary fewer values")
        try:
            self.base.validate()
        except ValueError as err:
            raise ValueError(f"the base scenario: {err}") from None
        for point in itertools.product(*self.vary.values()):
            values = dict(zip(self.vary, point))
            try:
                apply_changes(self.base, values).validate()
            except ValueError as err:
                shown = ", ".join(f"{k}={v}" for k, v in values.items())
                raise ValueError(f"the episodes with {shown}: {err}") from None
        return self

    @property
    def episodes(self) -> int:
        """Number of episodes: the product of the varied fields' counts times the seeds."""
        return math.prod(len(v) for v in self.vary.values()) * self.seeds

    def values(self, k: int) -> dict:
        """Episode k's varied values and seed: {field: value, ..., "seed": seed}."""
        if not 0 <= k < self.episodes:
            raise ValueError(f"episode {k} is not in this sweep (episodes 0 .. {self.episodes - 1})")
        point, j = divmod(k, self.seeds)
        out = {}
        for fname in reversed(list(self.vary)):
            point, i = divmod(point, len(self.vary[fname]))
            out[fname] = self.vary[fname][i]
        out = {f: out[f] for f in self.vary}
        out["seed"] = self.base.seed + j
        return out

    def scenario(self, k: int) -> Scenario:
        """Episode k's exact scenario."""
        return apply_changes(self.base, self.values(k))

    def to_json(self) -> dict:
        """The spec as sweep.json stores it."""
        return {"scenario": self.source, "base_scenario": dataclasses.asdict(self.base), "vary": self.vary,
                "seeds": self.seeds, "episodes": self.episodes}

    @classmethod
    def from_json(cls, data: dict) -> "SweepSpec":
        """Inverse of to_json."""
        return cls(Scenario(**data["base_scenario"]), dict(data["vary"]), int(data["seeds"]), data.get("scenario", ""))


def load_spec(folder: str | Path) -> SweepSpec:
    """The SweepSpec of a sweep folder (its sweep.json); ValueError if it is not one."""
    path = Path(folder) / "sweep.json"
    if not path.exists():
        raise ValueError(f"{folder} is not a sweep folder (no sweep.json); sweeps are runs/<stamp>-sweep-<scenario>/")
    try:
        return SweepSpec.from_json(json.loads(path.read_text())["spec"])
    except (ValueError, KeyError, TypeError) as err:
        raise ValueError(f"{path}: not a sweep description ({type(err).__name__}: {err})") from None
