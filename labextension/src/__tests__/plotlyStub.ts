/**
 * plotly.js for jest: jsdom has no canvas or layout to draw with, so the tests check the figure
 * each view hands to `Plotly.react` (kept on the element as `__figure`); the drawing itself is
 * checked in Chromium by the Galata tests (ui-tests/).
 */
export function react(
  div: any,
  data: any[],
  layout: any,
  config: any
): Promise<any> {
  div.__figure = { data, layout, config };
  div.dataset.drawnTraces = String(data.length);
  return Promise.resolve(div);
}

export function purge(div: any): void {
  delete div.__figure;
}

export const Plots = { resize: (): void => undefined };

export default { react, purge, Plots };
