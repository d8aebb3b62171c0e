"""The package version, in a module of its own so that any layer can read it without importing the
package's root (whose facade names the magics, the API and the widgets)."""

__version__ = "0.1.0"
