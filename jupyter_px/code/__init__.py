"""The code a run ships: from what a surface was given to what each replica runs, in one direction.

    a surface builds a source   sources.py     a script, code text, notebook cells, a function (the
                                               one reading of a plain str or path); %%px_distributed
                                               builds its text from the kernel (kernel.py), checked
                                               before it leaves (checks.py)
    loaded once                 loading.py     `load_code`: the run's files (`LoadedCode`), in the
                                               run service, or where a surface needed them first
                                               (the server, a sweep's trials): never twice; a
                                               notebook's cells by the rules of notebook.py
    the replica side            source_map.py  where each shipped line came from (tracebacks that
                                               name the notebook cell, the failure record)
                                function_calls.py  a function shipped by value, called in every
                                               replica, each replica's result read back

Nothing here imports a layer above it (the service, the backends, the surfaces), and this
`__init__` imports nothing: every replica imports `jupyter_px.code.source_map` and
`jupyter_px.code.function_calls` (standard library only), and a Kubernetes pod gets exactly
those files (`backends/kubernetes/shared/payload.py`).
"""
