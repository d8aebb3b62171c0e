import * as React from 'react';

/** How often ages count up, in milliseconds (views poll less often). */
export const AGE_TICK_MS = 1000;

/** The current time in seconds, updated every `ms`: ages tick without a new poll. */
export function useNow(ms: number = AGE_TICK_MS): number {
  const [now, setNow] = React.useState(() => Date.now() / 1000);
  React.useEffect(() => {
    const timer = window.setInterval(() => setNow(Date.now() / 1000), ms);
    return () => window.clearInterval(timer);
  }, [ms]);
  return now;
}

/**
 * Text that depends on the time ("started 12s ago"), rendered again each tick on its own: the view
 * around it, and the plots in that view, do not render again every second.
 */
export function Ticking(props: {
  text: (now: number) => string;
  ms?: number;
}): React.ReactElement {
  const now = useNow(props.ms);
  return React.createElement(React.Fragment, null, props.text(now));
}
