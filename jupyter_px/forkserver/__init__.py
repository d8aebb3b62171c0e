"""Warm processes: a template that has imported the framework, forked instead of started.

Starting a replica means starting an interpreter and importing the framework (torch: 0.7 to 1 s
of CPU each, four at once on two cores). A template process does that once and then forks, as
`multiprocessing`'s forkserver does with `set_forkserver_preload`; a forked child is made into
the process a fresh `python -m module ARGS` would have been (environment, working directory,
argv, open files, signal dispositions, random state) before the module's entry point runs.

* `template` - the long-lived process: preloads, listens on a Unix socket, keeps one standby
  owner ready (forked, its own imports done), hands each start to it, stops when idle, when its
  owner (a Jupyter server) exits, or on request.
* `zygote`   - a per-start copy of the template, forked before the owner imports anything, which
  forks the owner's children (replicas) on request, so each is a fresh copy of the template and
  a true child of the owner.
* `fresh`    - what a forked child does to become a fresh process.
* `client`   - what a starter calls: start an owner through the template (go-pipe semantics as
  `jupyter_px.processes.detached`), ask its status, stop it.
* `wire`     - length-prefixed JSON frames over the Unix socket, with file descriptors passed.

Standard library only (plus `jupyter_px.processes.detached`): everything imported here ends up in the
template and so in every forked replica.
"""
