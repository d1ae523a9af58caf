// docker-compose.yml's health check of `mongo`, run by mongosh inside its container. MongoDB
// runs with --auth and a keyfile; this initiates the one-member replica set, creates the
// administrator through the localhost exception (allowed only while no user exists, and
// only from inside the container), then one user per scope with its own database only.
// Healthy once this member is primary and every user exists. The passwords come from the
// container's environment (docker-compose.yml passes the MONGO_* variables).
const env = process.env;
const hello = db.hello();
if (!hello.setName) {
  rs.initiate({ _id: 'rs0', members: [{ _id: 0, host: 'mongo:27017' }] });
  quit(1);
}
if (!hello.isWritablePrimary) quit(1);
const admin = db.getSiblingDB('admin');
try {
  admin.auth('envengine-admin', env.MONGO_ADMIN_PASSWORD);
} catch {
  // Not created yet (the localhost exception allows this first user only).
  admin.createUser({ user: 'envengine-admin', pwd: env.MONGO_ADMIN_PASSWORD, roles: [{ role: 'root', db: 'admin' }] });
  admin.auth('envengine-admin', env.MONGO_ADMIN_PASSWORD);
}
const scopes = [
  ['gateway', env.MONGO_GATEWAY_PASSWORD, 'envengine_gateway'],
  ['placement', env.MONGO_PLACEMENT_PASSWORD, 'envengine_placement'],
  ['deployment', env.MONGO_DEPLOYMENT_PASSWORD, 'envengine_deployment'],
  ['secrets', env.MONGO_SECRETS_PASSWORD, 'envengine_secrets'],
];
for (const [user, pwd, database] of scopes) {
  const definition = { pwd, roles: [{ role: 'readWrite', db: database }] };
  if (admin.getUser(user)) admin.updateUser(user, definition);
  else admin.createUser({ user, ...definition });
}
