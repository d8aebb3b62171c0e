import { UseSignal } from '@jupyterlab/ui-components';
import * as React from 'react';

import type { SubmitState } from './submitState';

/** The outcome of the last Run, under the button. */
export function SubmitOutcome(props: { submit: SubmitState }): JSX.Element {
  const { submit } = props;
  return (
    <UseSignal signal={submit.changed}>
      {() => (
        <>
          {submit.error && (
            <pre className="jp-px-error jp-px-submit-error">{submit.error}</pre>
          )}
          {submit.done && <div className="jp-px-note">{submit.done}</div>}
        </>
      )}
    </UseSignal>
  );
}
