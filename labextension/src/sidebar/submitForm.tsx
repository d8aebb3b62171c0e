import { UseSignal } from '@jupyterlab/ui-components';
import * as React from 'react';

import type { SubmitState } from './submitState';

/** The outcome of the last Run, under the button, while its notebook is the active one. */
export function SubmitOutcome(props: { submit: SubmitState }): JSX.Element {
  const { submit } = props;
  return (
    <UseSignal signal={submit.changed}>
      {() => {
        const { error, done } = submit.outcome();
        return (
          <>
            {error && (
              <pre className="jp-px-error jp-px-submit-error">{error}</pre>
            )}
            {done && <div className="jp-px-note">{done}</div>}
          </>
        );
      }}
    </UseSignal>
  );
}
