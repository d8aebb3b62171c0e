import { UseSignal } from '@jupyterlab/ui-components';
import * as React from 'react';

import { filterRuns, IRunFilter, progressFraction } from '../runs';
import type { RunsModel } from '../runsModel';
import { groupRuns, sweepMatches } from '../sweepGroups';
import type { ISidebarActions } from './actions';
import { clearFinished } from './housekeeping';
import { RunRow } from './runRow';
import { SelectionBar } from './selectionBar';
import { SweepGroup } from './sweepGroup';
import { AGE_TICK_MS, useNow } from '../useNow';

export { AGE_TICK_MS };

const STATES = ['Pending', 'Running', 'Succeeded', 'Failed', 'Stopped', 'Lost'];

/**
 * The Runs section: the runs model's page of runs, newest first (a sweep's trials under the
 * sweep, collapsed until expanded), a filter, and Show more. The list is the section's one scroll
 * container; the filter and the selection bar stay at its top while it scrolls.
 */
export function RunsList(props: {
  model: RunsModel;
  actions: ISidebarActions;
}): JSX.Element {
  const { model, actions } = props;
  const now = useNow(AGE_TICK_MS);
  const [filter, setFilter] = React.useState<IRunFilter>({
    text: '',
    state: 'all'
  });
  const [chosen, setChosen] = React.useState<ReadonlySet<string>>(new Set());
  const [expanded, setExpanded] = React.useState<ReadonlySet<string>>(
    new Set()
  );
  const expand = (sweepId: string, on: boolean) => {
    const next = new Set(expanded);
    if (on) {
      next.add(sweepId);
    } else {
      next.delete(sweepId);
    }
    setExpanded(next);
  };
  const choose = (runId: string, on: boolean) => {
    const next = new Set(chosen);
    if (on) {
      next.add(runId);
    } else {
      next.delete(runId);
    }
    setChosen(next);
  };
  return (
    <UseSignal signal={model.changed}>
      {() => {
        const shown = filterRuns(model.runs, filter);
        const filtering = filter.text.trim() !== '' || filter.state !== 'all';
        // A sweep without a shown trial stays only where the filter is its name alone.
        const items = groupRuns(
          shown,
          model.sweeps,
          sweep => filter.state === 'all' && sweepMatches(sweep, filter.text)
        );
        // Runs deleted meanwhile (here or elsewhere) drop out of the selection.
        const selected = model.runs.filter(run => chosen.has(run.run_id));
        const finished = model.runs.filter(run => run.finished);
        return (
          <div className="jp-px-runs">
            {model.error && (
              <div className="jp-px-error">runs: {model.error} (retrying)</div>
            )}
            {model.runs.length === 0 &&
              model.sweeps.length === 0 &&
              !model.error && (
                <div className="jp-px-note">
                  No runs yet: submit a notebook, or run %%px_distributed.
                </div>
              )}
            <div className="jp-px-runs-head">
              {model.runs.length > 0 && (
                <div className="jp-px-run-filter">
                  <input
                    className="jp-mod-styled jp-px-filter-text"
                    type="search"
                    placeholder="Filter by name or id"
                    title="Filter by name or id"
                    aria-label="Filter runs by name or id"
                    value={filter.text}
                    onChange={event =>
                      setFilter({ ...filter, text: event.target.value })
                    }
                  />
                  <select
                    className="jp-mod-styled jp-px-filter-state"
                    aria-label="Filter runs by state"
                    value={filter.state}
                    onChange={event =>
                      setFilter({ ...filter, state: event.target.value })
                    }
                  >
                    <option value="all">all states</option>
                    <option value="active">not finished</option>
                    {STATES.map(state => (
                      <option key={state} value={state}>
                        {state}
                      </option>
                    ))}
                  </select>
                  {(finished.length > 0 || model.total > model.runs.length) && (
                    <button
                      className="jp-px-link jp-px-clear-finished"
                      title="Delete every finished run (also those not listed yet), after asking"
                      onClick={() =>
                        void clearFinished(model, actions).then(
                          done => done && setChosen(new Set())
                        )
                      }
                    >
                      Clear finished
                    </button>
                  )}
                </div>
              )}
              <SelectionBar
                selected={selected}
                actions={actions}
                clear={() => setChosen(new Set())}
              />
            </div>
            {filtering && (
              <div className="jp-px-note jp-px-filter-count">
                {shown.length} of {model.runs.length} shown
              </div>
            )}
            <ul className="jp-px-run-list">
              {items.map(item =>
                item.kind === 'run' ? (
                  <RunRow
                    key={item.run.run_id}
                    run={item.run}
                    now={now}
                    progress={progressFraction(model.progress[item.run.run_id])}
                    actions={actions}
                    selected={chosen.has(item.run.run_id)}
                    onSelect={on => choose(item.run.run_id, on)}
                  />
                ) : (
                  <SweepGroup
                    key={`sweep:${item.sweep.sweep_id}`}
                    sweep={item.sweep}
                    trials={item.trials}
                    model={model}
                    actions={actions}
                    now={now}
                    expanded={filtering || expanded.has(item.sweep.sweep_id)}
                    onExpand={on => expand(item.sweep.sweep_id, on)}
                    chosen={chosen}
                    choose={choose}
                  />
                )
              )}
            </ul>
            {model.total > model.runs.length && (
              <button
                className="jp-px-link jp-px-more"
                onClick={() => void model.showMore()}
              >
                Show more ({model.runs.length} of {model.total})
              </button>
            )}
          </div>
        );
      }}
    </UseSignal>
  );
}
