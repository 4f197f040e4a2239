"""The text of the symbolic reports: `hetprof profile --symbolic` (each quantity's formula in the
size parameters and its value at the sizes given) and `hetprof place` (where each parallel form is
cheaper as a size grows). Both render the plain data that `graphs.symbolic_profile.report` and the
place command build, which the JSON format writes as it is."""

from __future__ import annotations

from graphs.numbers import number


def render_symbolic(result: dict) -> str:
    """The symbolic report as text: each quantity's formula and its value at the sizes given."""
    values, formulas = result["values"], result["formulas"]
    at = ", ".join(f"{k} = {v}" for k, v in result["params"].items())
    procs = result["procs"]
    rows: list[tuple[str, str, str]] = [
        ("work", formulas["work"], number(values["work"])),
        ("span", formulas["span"], number(values["span"])),
    ]
    if formulas["time"] is not None:
        rows.append((f"time (P = {procs}, every schedule)", formulas["time"],
                     number(values["time"])))
    else:
        lower, upper = formulas["time_bounds"]
        exact = values["time"] is not None  # the bounds meet at these sizes
        rows.append((f"time (P = {procs}) at least", lower, number(values["time_bounds"][0])))
        rows.append((f"time (P = {procs}) at most", upper, number(values["time_bounds"][1])))
        if exact:
            rows.append((f"time (P = {procs}, every schedule)", "-", number(values["time"])))
        elif result.get("explicit_time") is not None:
            rows.append((f"time ({result['schedule']}, P = {procs}, explicit)", "-",
                         number(result["explicit_time"])))
    for world in ("cpu", "gpu", "peak"):
        rows.append((f"space {world} (words)", formulas["space"][world],
                     number(values["space"][world])))
    rows.append(("bytes to the device", formulas["bytes_to_device"],
                 number(values["bytes_to_device"])))
    rows.append(("bytes back to the host", formulas["bytes_to_host"],
                 number(values["bytes_to_host"])))
    for i, (box, numbers) in enumerate(zip(formulas["on"], values["on"], strict=True)):
        for part in ("transfer_in", "kernel", "transfer_out", "grow", "merge"):
            rows.append((f"on #{i + 1} {part.replace('_', ' ')}", box[part],
                         number(numbers[part])))
        if "total" in box:  # the paper's rules: §7.1.2's quantities
            rows.append((f"on #{i + 1} total (δ* + kernel + δ†)", box["total"],
                         number(numbers["total"])))
            rows.append((f"on #{i + 1} words allocated on the GPU", box["gpu_words"],
                         number(numbers["gpu_words"])))
    for name, centre in formulas["cost_centres"].items():
        rows.append((f'centre "{name}" work', centre["work"],
                     number(values["cost_centres"][name]["work"])))
    rows.append(("cost-graph nodes (explicit)", formulas["nodes"], number(values["nodes"])))
    width = max(len(r[0]) for r in rows)
    formula_width = min(70, max(len(r[1]) for r in rows))
    lines = [f"{result['file']}: symbolic profile in {', '.join(result['symbols']) or 'nothing'}"
             f" (P = {procs}), values at {at}",
             f"assuming: {'; '.join(result['assumptions'])}", ""]
    lines.append(f"{'quantity':<{width}}  {'formula':<{formula_width}}  value")
    for name, formula, value in rows:
        lines.append(f"{name:<{width}}  {formula:<{formula_width}}  {value}")
    return "\n".join(lines) + "\n"


def render_place(result: dict) -> str:
    """The report of `hetprof place` as text: per site, both times as formulas, their values at
    the sizes given, and the sizes from which each world is cheaper."""
    n = result["parameter"]
    lines = [f"{result['file']}: where each parallel form is cheaper as {n} grows "
             f"(P = {result['procs']}; time = {result['time']})", ""]
    if not result["sites"]:
        lines.append("no parallel form to place (no `on`, and no parmap or reduce outside one)")
    for site in result["sites"]:
        written = "under `on` (GPU)" if site["written"] == "gpu" else "on the CPU"
        lines.append(f"{site['site']}: written {written}; {site['method']}"
                     + (f" ({site['note']})" if site.get("note") else ""))
        if "time" in site:
            lines.append(f"  CPU time = {site['time']['cpu']}")
            lines.append(f"  GPU time = {site['time']['gpu']}")
        here = site["at_params"]
        lines.append(f"  at {n} = {result['params'][n]}: CPU {number(here['cpu'])}, "
                     f"GPU {number(here['gpu'])}")
        pieces = [f"{site['cheaper_from_1'].upper()} from {n} = 1"]
        for c in site["crossings"]:
            pieces.append(f"{c['cheaper'].upper()} from {n} = {number(c['n'])} ({c['method']})")
        if not site["crossings"]:
            upper = site.get("searched_up_to")
            pieces.append("no break-even" + (f" up to {upper}" if upper else ""))
        lines.append("  cheaper: " + "; ".join(pieces))
    return "\n".join(lines) + "\n"


