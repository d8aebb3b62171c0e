"""How runs and topologies are shown: one module per output form, shared by every surface.

The CLI, the magics, the widgets and the REST API render the same facts; each fact is rendered
here once so the surfaces cannot drift apart. `run_json` is the one JSON shape of a run.
"""
