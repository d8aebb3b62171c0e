import * as React from 'react';

import * as api from '../api';
import type {
  IStackFrame,
  IStacksGroup,
  IStacksReplica,
  IStacksSnapshot
} from '../types';

/** `2 replicas (master-0, worker-0)` or `worker-1`: who a group holds, as the CLI says it. */
export function groupWho(group: IStacksGroup): string {
  const names = group.replicas;
  return names.length === 1
    ? names[0]
    : `${names.length} replicas (${names.join(', ')})`;
}

/** `all_reduce (distributed_c10d.py line 2501)`, or `step, cell [4] line 5: dist.all_reduce(value)`. */
export function frameText(frame: IStackFrame): string {
  const file = frame.file.split('/').pop() ?? frame.file;
  const where = frame.cell
    ? `${frame.cell} line ${frame.cell_line}`
    : `${file} line ${frame.line ?? '?'}`;
  return `${frame.function}, ${where}${frame.code ? `: ${frame.code}` : ''}`;
}

/** What the stacks part of the run view holds: the snapshot shown, or why there is none. */
export interface IStacksState {
  snapshot: IStacksSnapshot | null;
  error: string | null;
  busy: boolean;
  /** Ask: a live run's replicas now (POST), a finished run's newest kept snapshot (GET). */
  load(): void;
}

/**
 * The run's stacks on demand: a running run's replicas are asked now (and the snapshot is kept in
 * the run); a finished run shows the newest snapshot kept (taken on request or on a stall), since
 * there is nobody left to ask.
 */
export function useStacks(
  runId: string,
  finished: () => boolean
): IStacksState {
  const [snapshot, setSnapshot] = React.useState<IStacksSnapshot | null>(null);
  const [error, setError] = React.useState<string | null>(null);
  const [busy, setBusy] = React.useState(false);
  const load = React.useCallback(() => {
    setBusy(true);
    setError(null);
    const ask = finished() ? api.getStacks(runId) : api.takeStacks(runId);
    ask
      .then(taken => setSnapshot(taken))
      .catch((reason: Error) => setError(reason.message))
      .finally(() => setBusy(false));
  }, [runId, finished]);
  return { snapshot, error, busy, load };
}

/** The run view's "Stacks" button. */
export function StacksButton(props: {
  stacks: IStacksState;
  finished: boolean;
}): JSX.Element {
  const { stacks, finished } = props;
  return (
    <button
      className="jp-mod-styled jp-px-output-stacks"
      title={
        finished
          ? 'Show the newest stacks kept in this run (taken on request or when a stall was noticed)'
          : "Take every replica's Python stacks now, grouped by identical stack (kept in the run)"
      }
      disabled={stacks.busy}
      onClick={() => stacks.load()}
    >
      {stacks.busy ? 'Stacks…' : 'Stacks'}
    </button>
  );
}

function FrameList(props: { frames: IStackFrame[] }): JSX.Element {
  return (
    <ol className="jp-px-stack-frames">
      {props.frames.map((frame, i) => (
        <li
          key={i}
          className={`jp-px-stack-frame${frame.user ? ' jp-px-stack-frame-user' : ''}`}
          title={`${frame.file}, line ${frame.line ?? '?'}`}
        >
          {frameText(frame)}
        </li>
      ))}
    </ol>
  );
}

/**
 * A thread's frames, innermost first, down to the outermost frame of the run's code; the frames
 * outside it (the replica's runner, the process that started it) under a fold of their own.
 */
function Frames(props: { frames: IStackFrame[] }): JSX.Element {
  const { frames } = props;
  let outermost = -1;
  frames.forEach((frame, i) => {
    if (frame.user) {
      outermost = i;
    }
  });
  if (outermost < 0 || outermost === frames.length - 1) {
    return <FrameList frames={frames} />;
  }
  const rest = frames.length - outermost - 1;
  return (
    <>
      <FrameList frames={frames.slice(0, outermost + 1)} />
      <details className="jp-px-stack-outer">
        <summary>
          {rest} frame{rest === 1 ? '' : 's'} around the run&apos;s code
        </summary>
        <FrameList frames={frames.slice(outermost + 1)} />
      </details>
    </>
  );
}

/** A group's stack, innermost first: its first replica's main thread (the group's are the same). */
function GroupFrames(props: {
  replica: IStacksReplica | undefined;
}): JSX.Element {
  const { replica } = props;
  if (!replica || replica.error) {
    return <div className="jp-px-note">{replica?.error ?? 'no answer'}</div>;
  }
  const main = replica.threads.find(thread => thread.main);
  const others = replica.threads.filter(thread => !thread.main);
  return (
    <>
      {main ? (
        <Frames frames={main.frames} />
      ) : (
        <div className="jp-px-note">no main thread</div>
      )}
      {others.length > 0 && (
        <details className="jp-px-stack-threads">
          <summary>
            {others.length} other thread{others.length === 1 ? '' : 's'} of{' '}
            {replica.key}
          </summary>
          {others.map(thread => (
            <div key={thread.ident} className="jp-px-stack-thread">
              <code>thread {thread.ident}</code>
              <Frames frames={thread.frames} />
            </div>
          ))}
        </details>
      )}
    </>
  );
}

/**
 * A stacks snapshot, grouped by identical main-thread stack, the largest group first: one line
 * per group ("2 replicas (master-0, worker-0): all_reduce <- step, cell [4] line 5"), its frames
 * under a fold.
 */
export function StacksSnapshotView(props: {
  snapshot: IStacksSnapshot;
}): JSX.Element {
  const { snapshot } = props;
  const byKey = new Map(snapshot.replicas.map(r => [r.key, r]));
  const taken = new Date(snapshot.taken_at * 1000).toLocaleTimeString();
  return (
    <div className="jp-px-stacks" data-why={snapshot.why}>
      <div className="jp-px-note jp-px-stacks-head">
        stacks taken at {taken} ({snapshot.why})
      </div>
      {snapshot.groups.length === 0 && (
        <div className="jp-px-note">no replica was running</div>
      )}
      {snapshot.groups.map(group => (
        <details
          key={group.replicas.join(' ')}
          className="jp-px-stacks-group"
          data-replicas={group.replicas.join(' ')}
        >
          <summary>
            <span className="jp-px-stacks-who">{groupWho(group)}</span>:{' '}
            <code className="jp-px-stacks-summary">{group.summary}</code>
          </summary>
          <GroupFrames replica={byKey.get(group.replicas[0])} />
        </details>
      ))}
    </div>
  );
}

/** Under the run view's toolbar: the snapshot, or why none came. */
export function StacksResult(props: {
  stacks: IStacksState;
}): JSX.Element | null {
  const { snapshot, error } = props.stacks;
  if (error) {
    return (
      <div className="jp-px-error jp-px-stacks-error">stacks: {error}</div>
    );
  }
  return snapshot ? <StacksSnapshotView snapshot={snapshot} /> : null;
}
