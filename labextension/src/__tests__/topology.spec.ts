import {
  formSchema,
  fromTopology,
  parsePath,
  problemsToErrorSchema,
  toTopology,
  withDefaults
} from '../topology';
import { MODEL_SCHEMA } from './fixtures';

describe('formSchema', () => {
  const schema = formSchema(MODEL_SCHEMA);

  it('inlines references and collapses nullable choices', () => {
    expect(schema.properties.framework).toEqual({
      enum: ['tensorflow', 'pytorch'],
      type: 'string',
      title: 'Framework'
    });
    const worker =
      schema.properties.environment.properties.replicas.properties.worker;
    expect(worker.type).toBe('array');
    expect(worker.items.required).toEqual(['index']);
    expect(
      worker.items.properties.resources.properties.cpu.properties.requests
    ).toEqual({
      type: 'string',
      title: 'Requests'
    });
    expect(JSON.stringify(schema)).not.toContain('$ref');
    expect(JSON.stringify(schema)).not.toContain('anyOf');
    expect(JSON.stringify(schema)).not.toContain('additionalProperties');
  });

  it('shows only the fields the sidebar edits', () => {
    expect(Object.keys(schema.properties)).toEqual([
      'framework',
      'backend',
      'environment'
    ]);
    expect(Object.keys(schema.properties.environment.properties)).toEqual([
      'resources',
      'replicas'
    ]);
    const override =
      schema.properties.environment.properties.replicas.properties.worker.items;
    expect(Object.keys(override.properties)).toEqual(['resources', 'index']);
  });
});

describe('form <-> topology', () => {
  const form = {
    framework: 'pytorch',
    backend: 'local',
    version: undefined,
    environment: {
      resources: {
        cpu: { requests: '2', limits: '' },
        memory: { limits: '1Gi' }
      },
      replicas: {
        n_workers: 3,
        worker: [
          {
            index: 2,
            resources: {
              cpu: { requests: ' 0.5 ' },
              memory: { requests: '500m' }
            }
          }
        ]
      }
    }
  };

  it('drops empty fields and turns numeric quantities into numbers', () => {
    expect(toTopology(form)).toEqual({
      framework: 'pytorch',
      backend: 'local',
      environment: {
        resources: { cpu: { requests: 2 }, memory: { limits: '1Gi' } },
        replicas: {
          n_workers: 3,
          worker: [
            {
              index: 2,
              resources: {
                cpu: { requests: 0.5 },
                memory: { requests: '500m' }
              }
            }
          ]
        }
      }
    });
  });

  it('round-trips what the server normalized back into the form', () => {
    const normalized = toTopology(form);
    const again = fromTopology(normalized);
    expect(again.environment.resources.cpu.requests).toBe('2');
    expect(again.environment.replicas.worker[0].resources.cpu.requests).toBe(
      '0.5'
    );
    expect(again.environment.replicas.n_workers).toBe(3);
    expect(toTopology(again)).toEqual(normalized);
  });

  it('keeps a per-index entry even when it only names the index', () => {
    expect(
      toTopology({ environment: { replicas: { worker: [{ index: 1 }, {}] } } })
    ).toEqual({
      environment: { replicas: { worker: [{ index: 1 }, {}] } }
    });
  });

  it('fills in the image setting for Kubernetes backends only', () => {
    expect(withDefaults({ backend: 'local' }, 'img:1')).toEqual({
      backend: 'local'
    });
    expect(withDefaults({ backend: 'native' }, 'img:1')).toEqual({
      backend: 'native',
      environment: { image: 'img:1' }
    });
    expect(
      withDefaults(
        { backend: 'native', environment: { image: 'mine' } },
        'img:1'
      ).environment.image
    ).toBe('mine');
  });
});

describe('problems beside their fields', () => {
  it('parses field paths', () => {
    expect(parsePath('environment.replicas.worker[3].index')).toEqual([
      'environment',
      'replicas',
      'worker',
      '3',
      'index'
    ]);
    expect(parsePath('a[0][1].b')).toEqual(['a', '0', '1', 'b']);
  });

  it('builds an rjsf error schema', () => {
    const errors = problemsToErrorSchema([
      {
        path: 'environment.replicas.worker[0].index',
        message: '9 is not below n_workers (7)'
      },
      { path: 'environment.replicas.n_workers', message: '-1 is not >= 0' },
      { path: '', message: 'no framework' }
    ]);
    expect(errors.environment.replicas.worker['0'].index.__errors).toEqual([
      '9 is not below n_workers (7)'
    ]);
    // The bound in the form's words, beside the field.
    expect(errors.environment.replicas.n_workers.__errors).toEqual([
      'at least 0'
    ]);
    expect(errors.__errors).toEqual(['no framework']);
  });

  it('puts a problem of a hidden field on its nearest shown ancestor, named below it', () => {
    const schema = formSchema(MODEL_SCHEMA);
    const errors = problemsToErrorSchema(
      [
        { path: 'environment.node_selector.zone', message: '3 is not a string' }
      ],
      schema
    );
    expect(errors.environment.__errors).toEqual([
      'node selector zone: 3 is not a string'
    ]);
  });
});
