import * as React from 'react';

import * as api from '../api';
import { CompareView } from '../panels/compareView';
import { TensorBoardView, startingText } from '../panels/tensorBoardView';

// The server is the boundary: TensorBoard's start answers once its page answers.
jest.mock('../api');
const startTensorBoard = api.startTensorBoard as jest.MockedFunction<
  typeof api.startTensorBoard
>;
const compareRuns = api.compareRuns as jest.MockedFunction<
  typeof api.compareRuns
>;
const startCompareTensorBoard =
  api.startCompareTensorBoard as jest.MockedFunction<
    typeof api.startCompareTensorBoard
  >;

describe('TensorBoard while it starts', () => {
  afterEach(() => jest.useRealTimers());

  it('says what it is doing and for how long, not only "Starting TensorBoard…"', async () => {
    jest.useFakeTimers();
    let answer: (value: any) => void = () => undefined;
    startTensorBoard.mockReturnValue(
      new Promise(resolve => (answer = resolve))
    );
    const view = new TensorBoardView('run-a+run-b');
    const status = () =>
      view.node.querySelector('.jp-px-tensorboard-starting')?.textContent;
    expect(status()).toBe(startingText(2, 0));
    expect(status()).toContain('reads the event files');
    jest.advanceTimersByTime(3000);
    expect(status()).toContain('(3 s)');
    expect(startTensorBoard).toHaveBeenCalledWith('run-a', { also: ['run-b'] });
    answer({ url: 'http://localhost/px/tensorboard/1/' });
    await Promise.resolve();
    await Promise.resolve();
    expect(view.node.querySelector('.jp-px-tensorboard-starting')).toBeNull();
    view.dispose();
  });
});

describe("the comparison's TensorBoard", () => {
  it('opens embedded in a panel, as the sidebar does, never in a new browser tab', async () => {
    compareRuns.mockReturnValue(new Promise(() => undefined));
    const opened: string[][] = [];
    const popup = jest.spyOn(window, 'open').mockImplementation(() => null);
    const view = new CompareView(['a', 'b'], 500, {}, ids => opened.push(ids));
    await view.openTensorBoard();
    expect(opened).toEqual([['a', 'b']]);
    expect(popup).not.toHaveBeenCalled();
    expect(startCompareTensorBoard).not.toHaveBeenCalled();
    popup.mockRestore();
    React.act(() => view.dispose());
  });
});
