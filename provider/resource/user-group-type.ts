// The UserGroup resource's type token, apart from the resource class: code that
// only names the type (the delete guard, the groups-file checks) must not load
// @pulumi/pulumi to learn a string.

/** Pulumi runs this type with its Node.js dynamic-provider plugin (as pulumi.dynamic.Resource does). */
export const USER_GROUP_TYPE = "pulumi-nodejs:dynamic/pulumi-user-groups:UserGroup";
