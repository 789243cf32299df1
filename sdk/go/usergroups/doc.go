// User groups of an embedded-dashboard service's /api/user interface.
package usergroups
