"""`jupyter px runs`: a sweep's trials listed together, under their sweep."""

from __future__ import annotations


def group_trials(views: list, rows: list[tuple[str, ...]]) -> list[tuple[str, ...]]:
    """The runs table with each sweep's trials together, under a row for the sweep, where its
    newest trial is; other runs stay where they are (newest first)."""
    out: list[tuple[str, ...]] = []
    placed: set[str] = set()
    width = len(rows[0]) if rows else 0
    for index, view in enumerate(views):
        link = view.record.sweep
        if link is None:
            out.append(rows[index])
            continue
        if link.sweep_id in placed:
            continue
        placed.add(link.sweep_id)
        out.append((f"sweep {link.sweep_id}", *([""] * (width - 1))))
        members = [i for i, v in enumerate(views) if v.record.sweep and v.record.sweep.sweep_id == link.sweep_id]
        for i in sorted(members, key=lambda i: views[i].record.sweep.trial):
            out.append((f"  t{views[i].record.sweep.trial} {rows[i][0]}", *rows[i][1:]))
    return out
