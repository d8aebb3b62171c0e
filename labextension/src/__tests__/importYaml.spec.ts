import {
  acceptDialog,
  dismissDialog,
  waitForDialog
} from '@jupyterlab/testutils';

import * as api from '../api';
import { importYaml } from '../sidebar/importYaml';
import { TopologyModel } from '../topologyModel';

// The server's validation is the boundary: the first paste is wrong, the fixed one is right.
jest.mock('../api');
const validate = api.validateTopology as jest.MockedFunction<
  typeof api.validateTopology
>;

const PASTED =
  'framework: pytorch\nenvironment:\n  replicas:\n    n_workers: -1\n';

function textarea(): HTMLTextAreaElement {
  return document.body.querySelector('.jp-Dialog textarea.jp-px-yaml')!;
}

describe('importYaml', () => {
  let model: TopologyModel;

  beforeEach(() => {
    validate.mockReset();
    model = new TopologyModel(null, 'local');
  });

  afterEach(() => model.dispose());

  it('keeps the pasted text, with the problems, after a validation error', async () => {
    validate.mockResolvedValueOnce({
      valid: false,
      problems: [
        { path: 'environment.replicas.n_workers', message: '-1 is not >= 0' }
      ]
    });
    const done = importYaml(model);

    await waitForDialog();
    textarea().value = PASTED;
    await acceptDialog();

    await waitForDialog();
    expect(textarea().value).toBe(PASTED);
    const problems = document.body.querySelector('.jp-Dialog .jp-px-problems');
    expect(problems?.textContent).toBe('Workers: at least 0');
    expect(validate).toHaveBeenCalledWith(PASTED);

    validate.mockResolvedValueOnce({
      valid: true,
      topology: {
        framework: 'pytorch',
        environment: { replicas: { n_workers: 1 } }
      }
    });
    textarea().value = PASTED.replace('-1', '1');
    await acceptDialog();
    await expect(done).resolves.toBe(true);
    expect(model.topology.environment.replicas.n_workers).toBe(1);
  });

  it('changes nothing when cancelled', async () => {
    const before = model.topology;
    const done = importYaml(model);
    await dismissDialog();
    await expect(done).resolves.toBe(false);
    expect(model.topology).toEqual(before);
    expect(validate).not.toHaveBeenCalled();
  });
});
