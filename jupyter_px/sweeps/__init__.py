"""Sweeps: a polyaxonfile's `hptuning:` (v0) or `matrix:` (v1) run as trials, each a whole
distributed run, searched by Optuna, owned by a detached controller.

    sweep = jupyter_px.sweep("train.py", "topology.yaml")   # a topology with a sweep section
    sweep.wait(); sweep.best; sweep.trials(); sweep.dataframe(); sweep.stop()
    jupyter_px.Sweep("last")

Modules: `space` (Polyaxon's kinds onto Optuna's distributions), `engine` (samplers, pruners,
the journal-file study), `controller` (the detached owner),
`service` (`SweepService`, what every surface calls), `api` (`sweep()`, `Sweep`). A sweep's
directory is the run store's (`jupyter_px.runstore.sweeps`, `RunStore.sweeps`), beside its trials.
"""
