import { StateDB } from '@jupyterlab/statedb';

import * as api from '../api';
import { TopologyModel } from '../topologyModel';

// The server's validation is the boundary: answer as it does for the quickstart's YAML.
jest.mock('../api');
const validate = api.validateTopology as jest.MockedFunction<
  typeof api.validateTopology
>;

const QUICK = {
  framework: 'pytorch',
  backend: 'local',
  environment: { replicas: { n_masters: 1, n_workers: 2 } }
};
const SOURCES = [null, '%%px_topology quick\nframework: pytorch\n'];

describe('TopologyModel following notebooks', () => {
  let state: StateDB;
  let model: TopologyModel;

  beforeEach(() => {
    validate.mockReset();
    validate.mockImplementation(async topology =>
      typeof topology === 'string'
        ? { valid: true, topology: QUICK }
        : { valid: true, topology: topology as any }
    );
    state = new StateDB();
    model = new TopologyModel(state, 'local');
  });

  afterEach(() => model.dispose());

  it("loads an opened notebook's %%px_topology and says so", async () => {
    await model.setNotebook('quickstart.ipynb', SOURCES);
    expect(model.topology).toEqual(QUICK);
    expect(model.loadedFrom).toBe(
      'from quickstart.ipynb, cell 2 (%%px_topology quick)'
    );
    expect(validate).toHaveBeenCalledWith('framework: pytorch\n');
    await model.validate();
    // Not the user's edits: nothing is kept for the notebook.
    expect(await state.fetch('jupyter-px:topology:quickstart.ipynb')).toBe(
      undefined
    );
  });

  it("keeps the user's edits for a notebook over its %%px_topology", async () => {
    await model.setNotebook('quickstart.ipynb', SOURCES);
    model.markEdited();
    model.setFormData({
      ...QUICK,
      environment: { replicas: { n_workers: 5 } }
    });
    await model.validate();
    expect(model.loadedFrom).toBe('your edits for quickstart.ipynb');

    await model.setNotebook('other.ipynb', []);
    expect(model.loadedFrom).toBeNull();
    await model.setNotebook('quickstart.ipynb', SOURCES);
    expect(model.topology.environment.replicas.n_workers).toBe(5);
    expect(model.loadedFrom).toBe('your edits for quickstart.ipynb');
  });

  it("keeps a sweep cell's sweep section with the form's job, so Submit starts the sweep", async () => {
    const hptuning = {
      concurrency: 2,
      matrix: { lr: { values: [0.1, 0.2] } }
    };
    validate.mockImplementation(async topology =>
      typeof topology === 'string'
        ? {
            valid: true,
            topology: topology.includes('hptuning')
              ? { ...QUICK, hptuning }
              : QUICK
          }
        : { valid: true, topology: topology as any }
    );
    const sweepCell = [
      '%%px_topology\nframework: pytorch\nhptuning:\n  concurrency: 2\n'
    ];
    await model.setNotebook('sweep.ipynb', sweepCell);
    expect(model.loadedFrom).toBe(
      'from sweep.ipynb, cell 1 (%%px_topology, a sweep: each trial runs this topology)'
    );
    // The form shows one trial's job; the section it does not show travels with it.
    expect(model.topology).toEqual({ ...QUICK, hptuning });

    // Edited, then reopened: the user's job, still with the cell's sweep.
    model.markEdited();
    model.setFormData({
      ...model.formData,
      environment: { replicas: { n_workers: 3 } }
    });
    await model.validate();
    await model.setNotebook('plain.ipynb', SOURCES);
    expect(model.topology).toEqual(QUICK);
    await model.setNotebook('sweep.ipynb', sweepCell);
    expect(model.topology).toEqual({
      ...QUICK,
      environment: { replicas: { n_workers: 3 } },
      hptuning
    });
  });

  it('says when the notebook topology does not validate, and keeps the form', async () => {
    validate.mockResolvedValueOnce({
      valid: false,
      problems: [{ path: 'framework', message: "'torch' is not one of" }]
    } as any);
    const before = model.topology;
    await model.setNotebook('bad.ipynb', ['%%px_topology\nframework: torch']);
    expect(model.topology).toEqual(before);
    expect(model.loadedFrom).toBe(
      "the topology from bad.ipynb, cell 1 (%%px_topology) does not validate (framework: 'torch' is not one of); the form is unchanged"
    );
  });
});

describe("TopologyModel's verdict", () => {
  let model: TopologyModel;

  beforeEach(() => {
    validate.mockReset();
    validate.mockImplementation(async topology => {
      const workers = (topology as any).environment.replicas.n_workers;
      return workers > 0
        ? { valid: true }
        : {
            valid: false,
            problems: [
              {
                path: 'environment.replicas.n_workers',
                message: `${workers} is below 1`
              }
            ]
          };
    });
    model = new TopologyModel(null, 'local');
  });

  afterEach(() => model.dispose());

  it('judges the value just typed, not the one before the debounce', async () => {
    await model.validate();
    expect(model.valid).toBe(true);
    const calls = validate.mock.calls.length;
    const data = JSON.parse(JSON.stringify(model.formData));
    data.environment.replicas.n_workers = 0;
    model.setFormData(data); // the check is scheduled, not done
    expect(model.valid).toBe(true);
    expect((await model.verdict())?.valid).toBe(false);
    expect(validate.mock.calls.length).toBe(calls + 1);
    // Nothing pending: the verdict is the one held, the server is not asked again.
    expect((await model.verdict())?.valid).toBe(false);
    expect(validate.mock.calls.length).toBe(calls + 1);
  });
});
