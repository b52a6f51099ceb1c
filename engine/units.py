"""The hidden units that follow features of the input most closely: Pearson's r between every
unit's h_t and every feature (Task.unit_features), over one sample's time steps."""
from __future__ import annotations

import numpy as np
import pandas as pd
import torch


def correlated_units(hidden: torch.Tensor, features: dict[str, np.ndarray], top: int = 10, per_feature: int = 3
                     ) -> pd.DataFrame:
    """The (feature, unit) pairs with the largest |r| between h_t of the unit and the feature over
    t, best first: at most `per_feature` units per feature (so one feature many units follow does
    not fill the list), `top` in all. Features or units that never change have no r.

    hidden    [T, H]: one layer and direction of one sample
    features  name -> [T]
    """
    h = hidden.double().numpy()  # [T, H]
    h_centred = h - h.mean(axis=0)  # [T, H]
    h_scale = np.sqrt((h_centred**2).sum(axis=0))  # [H]
    rows = []
    for name, values in features.items():
        v = values - values.mean()  # [T]
        v_scale = np.sqrt((v**2).sum())
        if v_scale == 0:
            continue
        with np.errstate(divide="ignore", invalid="ignore"):
            r = (v @ h_centred) / (v_scale * h_scale)  # [H]
        for unit in np.flatnonzero(np.isfinite(r)):
            rows.append((name, int(unit), float(r[unit])))
    table = pd.DataFrame(rows, columns=["feature", "unit", "r"])
    order = table["r"].abs().sort_values(ascending=False, kind="stable").index
    best = table.loc[order].groupby("feature", sort=False).head(per_feature)
    return best.head(top).reset_index(drop=True)
