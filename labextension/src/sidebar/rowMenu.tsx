import * as React from 'react';

/** One entry of a run row's overflow menu. */
export interface IRowMenuItem {
  /** The entry's class (`jp-px-action-<name>`), for styles and tests. */
  name: string;
  label: string;
  title?: string;
  /** Drawn in the error color (Delete). */
  danger?: boolean;
  run: () => void;
}

/**
 * A run row's "⋯" button and its menu: the row's less frequent actions in one place instead of a
 * line of links that wraps in a narrow pane. Closes on a choice, Escape or a click elsewhere.
 */
export function RowMenu(props: {
  label: string;
  items: IRowMenuItem[];
}): JSX.Element {
  const [open, setOpen] = React.useState(false);
  const root = React.useRef<HTMLDivElement>(null);
  React.useEffect(() => {
    if (!open) {
      return;
    }
    const close = (event: Event) => {
      if (
        event instanceof KeyboardEvent
          ? event.key === 'Escape'
          : !root.current?.contains(event.target as Node)
      ) {
        setOpen(false);
      }
    };
    document.addEventListener('mousedown', close, true);
    document.addEventListener('keydown', close, true);
    return () => {
      document.removeEventListener('mousedown', close, true);
      document.removeEventListener('keydown', close, true);
    };
  }, [open]);
  return (
    <div className="jp-px-row-menu-root" ref={root}>
      <button
        className="jp-px-link jp-px-row-menu"
        aria-haspopup="menu"
        aria-expanded={open}
        aria-label={props.label}
        title={props.label}
        onClick={() => setOpen(!open)}
      >
        ⋯
      </button>
      {open && (
        <ul className="jp-px-menu" role="menu">
          {props.items.map(item => (
            <li key={item.name} role="none">
              <button
                role="menuitem"
                className={
                  `jp-px-menu-item jp-px-action-${item.name}` +
                  (item.danger ? ' jp-px-danger' : '')
                }
                title={item.title}
                onClick={() => {
                  setOpen(false);
                  item.run();
                }}
              >
                {item.label}
              </button>
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}
