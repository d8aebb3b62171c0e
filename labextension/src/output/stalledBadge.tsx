import * as React from 'react';

/**
 * `no step logged since 14:02:11 (75 s ago); stalled after 60 s without one`: what the Stalled
 * badge's tooltip says (the limit is max(60 s, 10x the replica's median step time)).
 */
export function stalledTitle(
  since: number,
  after: number | null | undefined,
  now: number = Date.now() / 1000
): string {
  const at = new Date(since * 1000).toLocaleTimeString();
  const limit =
    after === null || after === undefined
      ? ''
      : `; stalled after ${Number(after.toPrecision(3))} s without one`;
  return `no step logged since ${at} (${Math.max(0, Math.round(now - since))} s ago)${limit}. Still running: Stacks shows where each rank is`;
}

/** A replica row's Stalled badge: a mark beside its state, not a state of its own. */
export function StalledBadge(props: {
  since: number;
  after?: number | null;
  now?: number;
}): JSX.Element {
  return (
    <span
      className="jp-px-badge jp-px-badge-stalled"
      title={stalledTitle(props.since, props.after, props.now)}
    >
      Stalled
    </span>
  );
}
