import * as React from 'react';

import { failureLine } from './failureLine';

/**
 * A failed run's exception line, read from its failing replica's log once (as the sidebar's run
 * card and the notebook's run output both show it); nothing until it is known.
 */
export function FailureLine(props: { runId: string }): JSX.Element | null {
  const [line, setLine] = React.useState('');
  React.useEffect(() => {
    let live = true;
    failureLine(props.runId).then(
      text => live && setLine(text),
      () => undefined
    );
    return () => {
      live = false;
    };
  }, [props.runId]);
  return line ? (
    <div className="jp-px-run-message jp-px-run-failure" title={line}>
      {line}
    </div>
  ) : null;
}
