import { LabIcon } from '@jupyterlab/ui-components';

/**
 * The sidebar's icon: three replica boxes wired to one master. Colors come from the theme
 * (`jp-icon3` follows --jp-inverse-layout-color3), so it works in light and dark themes.
 */
const PX_SVG = `<svg xmlns="http://www.w3.org/2000/svg" width="16" height="16" viewBox="0 0 24 24">
  <g class="jp-icon3" fill="#616161">
    <rect x="9" y="2" width="6" height="5" rx="1"/>
    <rect x="2" y="16" width="6" height="5" rx="1"/>
    <rect x="9" y="16" width="6" height="5" rx="1"/>
    <rect x="16" y="16" width="6" height="5" rx="1"/>
    <path d="M11.25 7h1.5v3.5H19a1 1 0 0 1 1 1V16h-1.5v-4H12.75v4h-1.5v-4H5.5v4H4v-4.5a1 1 0 0 1 1-1h6.25z"/>
  </g>
</svg>`;

export const pxIcon = new LabIcon({
  name: 'jupyter-px:sidebar',
  svgstr: PX_SVG
});
