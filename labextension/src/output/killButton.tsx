import { Dialog, showDialog } from '@jupyterlab/apputils';
import * as React from 'react';

import type { RunOutputModel } from './runOutputModel';
import type { IRunOutputActions } from './runOutputView';

/**
 * A running replica's Kill button: asks first (which signal), then ends it as a crash would, so
 * the run's recovery (a gang restart, a Slurm requeue) can be seen; says what was signalled.
 * It stays mounted for its row while the replica leaves Running (the kill's own effect), so what
 * it said is still there after the button goes.
 */
export function KillButton(props: {
  model: RunOutputModel;
  replica: string;
  label: string;
  /** The replica runs in an unfinished run: the button is offered. */
  killable: boolean;
  kill: NonNullable<IRunOutputActions['killReplica']>;
}): JSX.Element {
  const { model, replica, label, killable, kill } = props;
  const [said, setSaid] = React.useState<string | null>(null);
  const ask = async () => {
    const answer = await showDialog({
      title: `Kill ${label}?`,
      body:
        `End ${label} of run ${model.runId} as a crash would. The run then does what its ` +
        'termination says: with retries left, every replica starts again from its checkpoints; ' +
        'otherwise the run fails. SIGTERM lets it flush what it logged; SIGKILL does not.',
      buttons: [
        Dialog.cancelButton(),
        Dialog.warnButton({ label: 'SIGTERM' }),
        Dialog.warnButton({ label: 'SIGKILL' })
      ]
    });
    if (!answer.button.accept) {
      return;
    }
    const signal = answer.button.label === 'SIGTERM' ? 'TERM' : 'KILL';
    try {
      setSaid(await kill(model.runId, replica, signal));
    } catch (error) {
      setSaid(`cannot kill ${label}: ${(error as Error).message}`);
    }
    model.refresh();
  };
  return (
    <>
      {killable && (
        <button
          className="jp-px-replica-kill jp-mod-styled jp-mod-warn"
          title={`End ${label} as a crash would (asks which signal first)`}
          onClick={() => void ask()}
        >
          Kill…
        </button>
      )}
      {said && <span className="jp-px-replica-kill-said">{said}</span>}
    </>
  );
}
