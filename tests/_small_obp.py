"""Online bin packing at a tenth of its length: the nominal set's 5000 items per instance cut to 500,
and so its runs' adversarial instances (drawn at the nominal length); the capacity, the item-size
distribution, the baselines and the robust settings are OBP's. For tests about runs and their
records, where the instances' size is incidental: each evaluation costs about a hundredth of OBP's
(a decision looks at every bin opened so far). Named in a config by ``robust_helpers.SMALL_OBP``,
a file reference, which every process of a run loads (``tasks.get_task``)."""
from __future__ import annotations

from tasks.common.suite import seed_for
from tasks.obp import OBPTask
from tasks.obp import instances

ITEMS = instances.NOMINAL_ITEMS // 10


class SmallOBP(OBPTask):
    name = "obp_small"

    def make_nominal(self, seed: int | None = None) -> list[dict]:
        if seed is None:
            return instances.weibull_instances(num_items=ITEMS)
        return instances.weibull_instances(num_items=ITEMS, rng=seed_for(self.name, "nominal", seed))
