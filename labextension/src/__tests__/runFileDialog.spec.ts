import {
  acceptDialog,
  dismissDialog,
  waitForDialog
} from '@jupyterlab/testutils';

import { askRunFile, fileStem } from '../commands/runFileDialog';

const SUMMARY = 'pytorch on local: 1 master, 2 workers\nrole ...';

describe('Run distributed on a file', () => {
  it("names the run after the file's stem", () => {
    expect(fileStem('dir/sub/train_mnist.py')).toBe('train_mnist');
    expect(fileStem('train.v2.py')).toBe('train.v2');
    expect(fileStem('.hidden')).toBe('.hidden');
  });

  it('asks first: the name (editable) and the topology it runs with', async () => {
    const asked = askRunFile('work/train_mnist.py', SUMMARY);
    await waitForDialog();
    const dialog = document.body.querySelector('.jp-Dialog')!;
    const input = dialog.querySelector(
      '.jp-px-run-file-name'
    ) as HTMLInputElement;
    expect(input.value).toBe('train_mnist');
    expect(dialog.querySelector('.jp-px-run-file-summary')!.textContent).toBe(
      SUMMARY
    );
    input.value = ' mnist try 2 ';
    await acceptDialog();
    expect(await asked).toBe('mnist try 2');
  });

  it('submits nothing on Cancel', async () => {
    const asked = askRunFile('train.py', SUMMARY);
    await waitForDialog();
    await dismissDialog();
    expect(await asked).toBeNull();
  });
});
