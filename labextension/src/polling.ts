import { IPoll, Poll } from '@lumino/polling';

/**
 * Poll settings shared by the runs list and the open panels: the configured interval, doubling
 * (with jitter) after each failed request up to a minute, back to the interval on success, and
 * no requests at all while the view (or the browser tab) is hidden.
 */
export function pollFrequency(intervalSeconds: number): IPoll.Frequency {
  const interval = Math.max(500, Math.round(intervalSeconds * 1000));
  return { interval, backoff: 2, max: Math.max(interval, 60 * 1000) };
}

/**
 * Standby for a poll that serves one widget: while the widget is hidden or the document is.
 */
export function standbyWhenHidden(
  isVisible: () => boolean
): () => boolean | Poll.Standby {
  return () => (!isVisible() ? true : 'when-hidden');
}
