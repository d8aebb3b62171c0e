"""The code a run ships: from what a surface was given to what each replica runs, in one direction.

    what the user gave          sources.py     a typed source: a script, code text, notebook cells,
                                               a function (the one reading of a plain str or path)
    the replica side            source_map.py  where each shipped line came from (tracebacks that
                                               name the notebook cell, the failure record)
                                function_calls.py  a function shipped by value, called in every
                                               replica, each replica's result read back

Nothing here imports a layer above it (the service, the backends, the surfaces), and this
`__init__` imports nothing: every replica imports `jupyter_px.code.source_map` and
`jupyter_px.code.function_calls` (standard library only), and a Kubernetes pod gets exactly
those files (`backends/kubernetes/shared/payload.py`).
"""
