import type { IRunSummary } from '../types';

/** A run summary as the server sends it, with `overrides`. */
export function summary(overrides: Partial<IRunSummary> = {}): IRunSummary {
  return {
    run_id: 'run-1',
    name: null,
    state: 'Running',
    finished: false,
    reason: null,
    message: null,
    backend: 'local',
    framework: 'pytorch',
    submitted_from: 'sidebar',
    user: 'me',
    created_at: 1000,
    started_at: 1001,
    finished_at: null,
    updated_at: 1002,
    replicas_total: 3,
    replica_counts: { Running: 2, Pending: 1 },
    ...overrides
  };
}

// A trimmed copy of `jupyter px schema` (pydantic's output): $defs, nullable anyOf, quantities.
export const MODEL_SCHEMA = {
  $defs: {
    CpuRange: {
      additionalProperties: false,
      properties: {
        requests: {
          anyOf: [
            { minimum: 0, type: 'number' },
            { type: 'string' },
            { type: 'null' }
          ],
          default: null
        },
        limits: {
          anyOf: [
            { minimum: 0, type: 'number' },
            { type: 'string' },
            { type: 'null' }
          ],
          default: null
        }
      },
      type: 'object'
    },
    Resources: {
      additionalProperties: false,
      properties: {
        cpu: {
          anyOf: [{ $ref: '#/$defs/CpuRange' }, { type: 'null' }],
          default: null
        },
        memory: {
          anyOf: [{ $ref: '#/$defs/CpuRange' }, { type: 'null' }],
          default: null
        }
      },
      type: 'object'
    },
    ReplicaOverride: {
      additionalProperties: false,
      properties: {
        resources: {
          anyOf: [{ $ref: '#/$defs/Resources' }, { type: 'null' }],
          default: null
        },
        env: {
          anyOf: [
            { additionalProperties: { type: 'string' }, type: 'object' },
            { type: 'null' }
          ]
        },
        index: { minimum: 0, type: 'integer', title: 'Index' }
      },
      required: ['index'],
      type: 'object'
    },
    Replicas: {
      additionalProperties: false,
      properties: {
        n_workers: { default: 0, minimum: 0, type: 'integer' },
        worker: { items: { $ref: '#/$defs/ReplicaOverride' }, type: 'array' }
      },
      type: 'object'
    },
    Environment: {
      additionalProperties: false,
      properties: {
        resources: {
          anyOf: [{ $ref: '#/$defs/Resources' }, { type: 'null' }],
          default: null
        },
        replicas: {
          anyOf: [{ $ref: '#/$defs/Replicas' }, { type: 'null' }],
          default: null
        },
        node_selector: { anyOf: [{ type: 'object' }, { type: 'null' }] }
      },
      type: 'object'
    }
  },
  properties: {
    version: { anyOf: [{ type: 'number' }, { type: 'null' }], default: null },
    framework: {
      anyOf: [
        { enum: ['tensorflow', 'pytorch'], type: 'string' },
        { type: 'null' }
      ],
      default: null
    },
    backend: { default: 'local', enum: ['local', 'native'], type: 'string' },
    environment: { $ref: '#/$defs/Environment' }
  },
  additionalProperties: false,
  type: 'object',
  $schema: 'https://json-schema.org/draft/2020-12/schema'
};
