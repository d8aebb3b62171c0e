import * as React from 'react';

import * as Plotly from 'plotly.js-dist-min';

import { IFigure } from '../plotting/figures';
import { PlotlyFigure } from '../plotting/plotlyFigure';
import { mount } from './render';

/** A figure of one line; a new object (and new arrays) on every call, as views build them. */
function lossFigure(values: number[], color = '#1f77b4'): IFigure {
  return {
    data: [{ x: values.map((_, i) => i), y: [...values], line: { color } }],
    layout: { yaxis: { type: 'log' } }
  } as unknown as IFigure;
}

/** A parent that renders again each time `tick` is called, as a view whose age ticks does. */
function Ticker(props: {
  figureAt: (tick: number) => IFigure;
  expose: (tick: () => void) => void;
}): JSX.Element {
  const [tick, setTick] = React.useState(0);
  props.expose(() => setTick(n => n + 1));
  return <PlotlyFigure label="loss" figure={props.figureAt(tick)} />;
}

async function settle(): Promise<void> {
  await React.act(() => new Promise<void>(resolve => setTimeout(resolve, 20)));
}

describe('PlotlyFigure', () => {
  it('draws again when what the figure shows changes, not on every render of its parent', async () => {
    const react = jest.spyOn((Plotly as any).default ?? Plotly, 'react');
    let tick = (): void => undefined;
    const values = [10, 1, 0.1];
    let color = '#1f77b4';
    const widget = mount(
      <Ticker
        figureAt={() => lossFigure(values, color)}
        expose={next => (tick = next)}
      />
    );
    await settle();
    expect(react).toHaveBeenCalledTimes(1);

    for (let i = 0; i < 5; i++) {
      React.act(() => tick()); // a new figure object with the same values: nothing to draw
      await settle();
    }
    expect(react).toHaveBeenCalledTimes(1);

    values.push(0.01); // a new point
    React.act(() => tick());
    await settle();
    expect(react).toHaveBeenCalledTimes(2);
    expect((react.mock.calls[1][1] as any[])[0].y).toEqual([10, 1, 0.1, 0.01]);

    color = '#ff7f0e'; // the theme changed
    React.act(() => tick());
    await settle();
    expect(react).toHaveBeenCalledTimes(3);
    React.act(() => widget.dispose());
    react.mockRestore();
  });
});
