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
 * A poll that serves one view: `factory` every `intervalSeconds` (see `pollFrequency`), and none
 * while the view (`isVisible` false) or the browser tab is hidden.
 */
export function viewPoll(options: {
  name: string;
  intervalSeconds: number;
  isVisible: () => boolean;
  factory: () => Promise<void>;
  auto?: boolean;
}): Poll {
  const { isVisible } = options;
  return new Poll({
    auto: options.auto ?? true,
    factory: options.factory,
    frequency: pollFrequency(options.intervalSeconds),
    standby: () => (isVisible() ? 'when-hidden' : true),
    name: options.name
  });
}
