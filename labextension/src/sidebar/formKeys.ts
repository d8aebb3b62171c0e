import type * as React from 'react';

/**
 * Enter in a text field of an HTML form "submits" it implicitly: the browser clicks the form's
 * first submit button. In the schema form that is the first array's Add button (its `<button>`
 * has no `type`), so Enter silently appended an empty per-worker override and the topology
 * turned invalid. Enter in a field of the sidebar form never reaches the browser's default;
 * it calls `onEnter` instead (in the topology form and the run name: run, when the form is valid).
 */
export function enterInFields(
  event: React.KeyboardEvent,
  onEnter?: () => void
): void {
  const target = event.target as HTMLElement;
  if (event.key !== 'Enter' || target.tagName !== 'INPUT') {
    return;
  }
  const type = ((target as HTMLInputElement).type || 'text').toLowerCase();
  if (['button', 'submit', 'reset', 'checkbox', 'radio'].includes(type)) {
    return;
  }
  event.preventDefault();
  onEnter?.();
}
