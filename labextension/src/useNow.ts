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
