#!/usr/bin/env node
const env = process.env;
const hook = env.BUILD_WEBHOOK;
const isCI = Boolean(process.env.CI);

async function main(status) {
  const res = await fetch(hook, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${env.BUILD_TOKEN}` },
    body: JSON.stringify({ status, ci: isCI, branch: env.GIT_BRANCH }),
  });
  console.log(res.status);
}

main(process.argv[2] || 'ok');
