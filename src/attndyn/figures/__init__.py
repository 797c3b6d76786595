"""Figures: the matplotlib helpers the experiments and the demo draw with (:mod:`.draw`),
:func:`attndyn.plot` (:mod:`.plot`) and the ``traj.attndyn`` accessor (:mod:`.accessor`).
Nothing here is imported with ``attndyn`` itself but :mod:`.plot` and :mod:`.accessor`, which load
matplotlib only when they draw."""
