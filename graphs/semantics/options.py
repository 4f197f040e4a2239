"""The knobs of one evaluation under the cost semantics, shared by the explicit and the symbolic
evaluator: the device profile (the machine models' numbers), the rule set, the GPU mode, the limits
that stop a runaway program, and what the GPU does when a region fills up (Fig. 9's NoExpandWE).

Two rule sets (`RULES`):

- "calibrated" (the default): the rules hetprof predicts hardware with. They are the paper's
  rules (Figs. 3-6, 9) where the paper is exact, and differ where measurement, Harlan or a garbled
  formula made hetprof choose otherwise (the README's table "The paper's rules and hetprof's").
- "paper": every choice the paper makes, for people who study the cost semantics itself; §7.1 is
  reproduced under it (tests/test_section71.py). `EvaluationOptions` applies the preset's
  machine-level choices here, in one place; the evaluators read `paper` for the rules':
  * Fig. 9's GPU costs (`gpu_mode` "paper"), with no kernel launch and no atomic cost (the paper
    has neither: a device box costs its longest path, §6.4);
  * a warp's threads step edge by edge (§6.4's W_i^j, `gpu.lockstep` "edge"), also where they
    took different sides of a branch;
  * NoExpandWE (Fig. 9): a region that fills up on the GPU is an error;
  * allocation moves ap by |v| + 1 (Fig. 3 and Fig. 9 both write ap + |v| + 1);
  * parmap applies f to each element, `f e_i` by the application rule (Fig. 6): the closure's
    write (when f is a lambda) and read and the ⊕ per element, a literal's elements evaluated in
    the threads;
  * `fix` writes the closure clos(f, u, E) and then evaluates u, which writes u's (Fig. 5);
  * parallel branches (`||`, parmap threads) each start from the same configuration table and are
    merged (Fig. 6, Def. 4.3): an `on` in a branch pushes what that branch's table holds;
  * δ† of an `on` is Σ_i δ_i of the region merges (Fig. 6), with no extra merge step;
  * `on local [ρ]` as §7.1.2 costs it: every access to ρ on the GPU is local (1), nothing is
    staged before the kernel, and one thread per work group writes the group's results back to
    global memory after it, l per work group (§7.1.2's l·k).
  `PAPER_PROFILE` (models/device_profile.py) gives the preset's numbers: abstract units, and a
  BSIZE large enough that §7.1's region r0 never needs resizing (§7.1 assumes it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from models.device_profile import RULES, DeviceProfile
from profiler.errors import ParameterError

if TYPE_CHECKING:
    from graphs.semantics.explicit import OffloadObserver

DEFAULT_MAX_STEPS = 5_000_000
DEFAULT_MAX_DEPTH = 20_000
DEFAULT_MAX_GRAPH = 6_000_000
"""The most cost-graph nodes and GPU path edges an explicit evaluation builds by default. With
what comes with them (values, regions, then the schedule and the cost-by-source tree) each took
150 to 700 bytes of peak memory on the examples at n = 10^5 (700: zipmul_cpu, whose analysis
holds most; 290: zipmul; 320: dc_sum and nbody; measured 2026-11-27), so 6 M are about 1-4 GB."""
GRAPH_CHECK_EVERY = 65_536  # evaluation steps between two checks of the graph's size


@dataclass(frozen=True, slots=True)
class EvaluationOptions:
    """Knobs of one evaluation. `rules` None takes the profile's rule set; under "paper" the
    profile's GPU is Fig. 9's (mode "paper", no launch or atomic cost) and NoExpandWE is an error,
    whatever the other knobs said (a `gpu_mode` of "dmm" is refused)."""

    profile: DeviceProfile = DeviceProfile()
    gpu_mode: str | None = None  # "paper" | "dmm"; None: the profile's
    max_steps: int = DEFAULT_MAX_STEPS
    max_depth: int = DEFAULT_MAX_DEPTH
    max_graph: int = DEFAULT_MAX_GRAPH  # cost-graph nodes plus GPU path edges
    grow_gpu_regions: bool = True  # Harlan's retry; False: NoExpandWE is an error (Fig. 9)
    observer: OffloadObserver | None = None
    rules: str | None = None  # "calibrated" | "paper"; None: the profile's

    def __post_init__(self) -> None:
        rules = self.rules or self.profile.rules
        if rules not in RULES:
            raise ParameterError(f"unknown rule set {rules!r}; choose one of {', '.join(RULES)}")
        object.__setattr__(self, "rules", rules)
        if rules != "paper":
            return
        if self.gpu_mode not in (None, "paper"):
            raise ParameterError(f"the paper's rules price the GPU by Fig. 9 (GPU mode paper), "
                                 f"not {self.gpu_mode!r}")
        object.__setattr__(self, "profile", self.profile.with_gpu(mode="paper", launch=0.0,
                                                                   atomic=0.0, lockstep="edge"))
        object.__setattr__(self, "gpu_mode", "paper")
        object.__setattr__(self, "grow_gpu_regions", False)

    @property
    def paper(self) -> bool:
        """Whether the paper's rules apply (see the module's docstring)."""
        return self.rules == "paper"
