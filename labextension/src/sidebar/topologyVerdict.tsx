import * as React from 'react';

import { problemLines } from '../problemText';
import type { IProblem } from '../request';
import { advancedSchema, getIn } from '../roles';
import { parsePath, problemsToErrorSchema, shownPrefix } from '../topology';
import type { TopologyModel } from '../topologyModel';
import { cardErrorPaths } from './topologyCard';

/**
 * Whether a field prints this problem under itself: one of the card's (framework, counts,
 * resources), or, while the "Overrides, images, processes" section is open, one of its form's
 * (any field of that form's schema the problem's path reaches).
 */
function printedAtField(problem: IProblem, model: TopologyModel): boolean {
  const errors = problemsToErrorSchema([problem], model.schema ?? undefined);
  if (
    cardErrorPaths(model.formData).some(
      path => (getIn(errors, path)?.__errors ?? []).length > 0
    )
  ) {
    return true;
  }
  if (!model.advancedOpen || !model.schema || !problem.path) {
    return false;
  }
  // Where the form's errors put it (its shown ancestor in the whole form), if that field is
  // one the section's form draws.
  const at = shownPrefix(model.schema, parsePath(problem.path));
  const advanced = advancedSchema(model.schema, model.formData);
  return at.length > 0 && shownPrefix(advanced, at).length === at.length;
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
    problems.filter(problem => !printedAtField(problem, model)),
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
