/**
 * After the browser tests: stop the runs still running, the TensorBoard servers and the warm
 * templates they started. All are detached by design (they outlive a Jupyter server), and
 * Playwright kills the web server outright, so those recorded in the tests' private store are
 * stopped here: none outlives the tests. (A run left running is a test's omission: each says so.)
 */
const { execFileSync } = require('child_process');
const path = require('path');

module.exports = async () => {
  const python = process.env.PX_PYTHON || 'python';
  const code =
    'from jupyter_px import tensorboard\n' +
    'from jupyter_px.service import RunService, warm\n' +
    'runs = RunService()\n' +
    'for run_id in runs.run_ids():\n' +
    '    if not runs.status(run_id).state.finished:\n' +
    '        print(f"teardown: run {run_id} was still running: stopped", flush=True)\n' +
    '        try:\n' +
    '            runs.stop(run_id)\n' +
    '        except Exception:\n' +
    '            runs.stop(run_id, force=True)\n' +
    'for server in tensorboard.list_servers():\n' +
    '    tensorboard.stop(server.key)\n' +
    'warm.stop("the browser tests ended")\n';
  try {
    execFileSync(python, ['-c', code], {
      env: {
        ...process.env,
        PX_HOME: path.join(__dirname, '.px_home'),
        PYTHONPATH: path.join(__dirname, '..')
      },
      stdio: 'inherit'
    });
  } catch (error) {
    console.warn(
      "could not stop the tests' runs, TensorBoard servers and warm templates:",
      error.message
    );
  }
};
