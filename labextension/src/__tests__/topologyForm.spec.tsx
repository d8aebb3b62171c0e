import * as React from 'react';

import { TopologyForm } from '../sidebar/topologyForm';
import { formSchema, problemsToErrorSchema } from '../topology';
import { TopologyModel } from '../topologyModel';
import { MODEL_SCHEMA } from './fixtures';
import { actions, mount } from './render';

describe('TopologyForm problems', () => {
  it('names an override by its worker, says each problem once, no array positions', () => {
    const model = new TopologyModel(null, 'local');
    model.schema = formSchema(MODEL_SCHEMA);
    model.formData = {
      framework: 'pytorch',
      environment: { replicas: { n_workers: 1, worker: [{ index: 1 }] } }
    };
    const problem = {
      path: 'environment.replicas.worker[0].index',
      message: '1 is not below n_workers (1)'
    };
    model.validation = { valid: false, problems: [problem, problem] };
    model.errorSchema = problemsToErrorSchema([problem], model.schema);
    const widget = mount(<TopologyForm model={model} actions={actions()} />);
    const verdict = widget.node.querySelector('.jp-px-verdict')!;
    expect(verdict.textContent).toBe(
      '1 problem:worker 1 index: 1 is not below n_workers (1)'
    );
    const text = widget.node.textContent ?? '';
    expect(text).not.toMatch(/worker\.0|worker\[0\]/);
    expect(text.split('worker 1 index:').length - 1).toBe(1);
    React.act(() => widget.dispose());
    model.dispose();
  });
});
