import * as React from 'react';

import { problemLines } from '../problemText';
import type { IProblem } from '../request';
import { getIn } from '../roles';
import { problemsToErrorSchema } from '../topology';
import type { TopologyModel } from '../topologyModel';
import { cardErrorPaths } from './topologyCard';

/** Whether the card prints this problem under one of its fields (framework, counts, resources). */
function printedAtCard(problem: IProblem, model: TopologyModel): boolean {
  const errors = problemsToErrorSchema([problem], model.schema ?? undefined);
  return cardErrorPaths(model.formData).some(
    path => (getIn(errors, path)?.__errors ?? []).length > 0
  );
}

/**
 * The server's verdict on the form: the valid topology's headline, or how many problems there
 * are and, once each, those that no field of the card shows ("worker 1 index: ..."); a problem
 * the card prints under its field is counted here, not said again. The sidebar draws it above
 * the form's scrolling section, so the list is never clipped inside it.
 */
export function TopologyVerdict(props: {
  model: TopologyModel;
}): JSX.Element | null {
  const { model } = props;
  const validation = model.validation;
  if (!validation) {
    return null;
  }
  if (validation.valid) {
    const headline = (validation.summary ?? '').split('\n')[0];
    return <div className="jp-px-verdict jp-px-valid">✓ {headline}</div>;
  }
  const problems = validation.problems ?? [];
  const all = problemLines(problems, model.formData);
  if (!all.length) {
    return (
      <div className="jp-px-verdict jp-px-invalid">{validation.message}</div>
    );
  }
  const rest = problemLines(
    problems.filter(problem => !printedAtCard(problem, model)),
    model.formData
  );
  const atFields = all.length - rest.length;
  const count = `${all.length} problem${all.length === 1 ? '' : 's'}`;
  const where =
    atFields === 0
      ? ''
      : atFields === all.length
        ? all.length === 1
          ? ', under its field'
          : ', under their fields'
        : ` (${atFields} under ${atFields === 1 ? 'its field' : 'their fields'})`;
  return (
    <div className="jp-px-verdict jp-px-invalid">
      {`${count}${where}${rest.length ? ':' : ''}`}
      {rest.length > 0 && (
        <ul className="jp-px-problems">
          {rest.map(line => (
            <li key={line}>{line}</li>
          ))}
        </ul>
      )}
    </div>
  );
}
