import { problemLines, problemPlace } from '../problemText';

const FORM = {
  environment: {
    replicas: { n_workers: 2, worker: [{ index: 1 }, {}], ps: [{ index: 0 }] }
  }
};

describe('problemPlace', () => {
  it('names an override by the worker it applies to, not its position', () => {
    expect(
      problemPlace(
        'environment.replicas.worker[0].resources.memory.requests',
        FORM
      )
    ).toBe('worker 1 memory requests');
    expect(problemPlace('environment.replicas.worker.0.index', FORM)).toBe(
      'worker 1 index'
    );
    expect(problemPlace('environment.replicas.ps[0].image', FORM)).toBe(
      'parameter server 0 image'
    );
  });

  it('names an override without an index by its place among overrides', () => {
    expect(problemPlace('environment.replicas.worker[1].index', FORM)).toBe(
      'worker override 2 index'
    );
    expect(problemPlace('environment.replicas.worker[0].index')).toBe(
      'worker override 1 index'
    );
  });

  it("names the other fields by the form's words", () => {
    expect(problemPlace('environment.replicas.n_workers')).toBe('Workers');
    expect(problemPlace('environment.resources.cpu.limits')).toBe(
      'master cpu limits'
    );
    expect(
      problemPlace('environment.replicas.default_worker.resources.gpu')
    ).toBe('every worker gpu');
    expect(problemPlace('framework')).toBe('Framework');
  });
});

describe('problemLines', () => {
  it('says each problem once', () => {
    const problem = {
      path: 'environment.replicas.worker[0].index',
      message: '1 is not below n_workers (1)'
    };
    expect(
      problemLines([problem, problem, { path: '', message: 'x' }], FORM)
    ).toEqual(['worker 1 index: 1 is not below n_workers (1)', 'x']);
  });
});
