/**
 * After the browser tests: stop the TensorBoard servers they started. TensorBoard is detached
 * by design (it outlives a Jupyter server), and Playwright kills the web server outright, so the
 * servers recorded in the tests' private store are stopped here.
 */
const { execFileSync } = require('child_process');
const path = require('path');

module.exports = async () => {
  const python = process.env.PX_PYTHON || 'python';
  const code =
    'from jupyter_px import tensorboard\n' +
    'for server in tensorboard.list_servers():\n' +
    '    tensorboard.stop(server.key)\n';
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
      "could not stop the tests' TensorBoard servers:",
      error.message
    );
  }
};
