"""The experiments: one class per published claim, in one subpackage per model family
(``experiments/<family>/<claim>.py``), registered in the ``attndyn.experiments`` entry-point group.
The framework they plug into is :mod:`attndyn.claims`."""
