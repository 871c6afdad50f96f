// Drives Apache Iggy's web console (built with build:static, served by
// iggy-server at /ui) in headless Chromium and records every console
// error, page error, failed request and HTTP error response.
import puppeteer from 'puppeteer-core';

const base = process.env.BASE || 'http://127.0.0.1:13000';
const problems = [];
const api = [];
const log = (...a) => console.log(new Date().toISOString(), ...a);

const browser = await puppeteer.launch({
  executablePath: '/usr/bin/chromium', headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
});
const page = await browser.newPage();
page.on('console', m => { if (m.type() === 'error') problems.push(`console.error: ${m.text()}`); });
page.on('pageerror', e => problems.push(`pageerror: ${e.message}`));
page.on('requestfailed', r => problems.push(`requestfailed: ${r.method()} ${r.url()} ${r.failure()?.errorText}`));
page.on('response', r => {
  const u = new URL(r.url());
  if (!u.pathname.startsWith('/ui')) api.push(`${r.request().method()} ${u.pathname}${u.search} -> ${r.status()}`);
  if (r.status() >= 400) problems.push(`HTTP ${r.status()}: ${r.request().method()} ${r.url()}`);
});

async function clickText(selector, text) {
  const handles = await page.$$(selector);
  for (const h of handles) {
    const t = (await page.evaluate(el => el.textContent, h)).trim();
    if (t.includes(text)) { await h.click(); return; }
  }
  throw new Error(`no ${selector} with text ${text}`);
}
const settle = (ms = 1500) => new Promise(r => setTimeout(r, ms));
async function apiCall(method, path, token, body) {
  const r = await fetch(base + path, { method, headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: body ? JSON.stringify(body) : undefined });
  return [r.status, await r.text()];
}

try {
  log('open /ui');
  await page.goto(`${base}${process.env.START || '/ui'}`, { waitUntil: 'networkidle0' });
  log('url', page.url());
  await page.waitForSelector('input[name=username]');
  await page.$eval('input[name=username]', el => { el.value = ''; });
  await page.type('input[name=username]', 'iggy');
  await page.type('input[name=password]', 'iggy');
  await Promise.all([page.waitForNavigation({ waitUntil: 'networkidle0' }), page.click('button[type=submit]')]);
  log('logged in, url', page.url());

  await page.goto(`${base}/ui/dashboard/streams`, { waitUntil: 'networkidle0' });
  await clickText('button', 'New stream');
  await page.waitForSelector('input[name=name]');
  await page.type('input[name=name]', 'console-stream');
  await clickText('button[type=submit]', 'Create');
  await settle();
  log('stream created, url', page.url());

  await page.goto(`${base}/ui/dashboard/streams/0`, { waitUntil: 'networkidle0' });
  await clickText('button', 'Add Topic');
  await page.waitForSelector('input[name=topicName]');
  await page.type('input[name=topicName]', 'console-topic');
  await page.click('input[name=partitionsCount]', { clickCount: 3 });
  await page.keyboard.press('Backspace');
  await page.type('input[name=partitionsCount]', '2');
  await clickText('button[type=submit]', 'Create');
  await settle();
  log('topic created, url', page.url());

  // The console has no producer: send through the REST API with the
  // console's own token (from its cookie).
  const cookies = await browser.cookies();
  const token = cookies.find(c => /token/i.test(c.name))?.value;
  const [st, body] = await apiCall('POST', '/streams/0/topics/0/messages', token,
    { partitioning: { kind: 'partition_id', value: 'AAAAAA==' },
      messages: [{ id: 42, payload: Buffer.from('hello from the console test').toString('base64'),
                   user_headers: [{ key: { kind: 'string', value: Buffer.from('k').toString('base64') },
                                    value: { kind: 'string', value: Buffer.from('v').toString('base64') } }] }] });
  log('send', st, body);

  for (const p of ['/ui/dashboard/streams/0/topics/0', '/ui/dashboard/streams/0/topics/0/partitions/0/messages',
                   '/ui/dashboard/settings/users', '/ui/dashboard/overview', '/ui/dashboard/clients']) {
    await page.goto(base + p, { waitUntil: 'networkidle0' });
    await settle(800);
    const text = await page.evaluate(() => document.body.innerText);
    log('page', p, '->', page.url(), '|', text.replace(/\s+/g, ' ').slice(0, 300));
  }
  const msgs = await page.goto(`${base}/ui/dashboard/streams/0/topics/0/partitions/0/messages`, { waitUntil: 'networkidle0' });
  await settle(800);
  const shown = await page.evaluate(() => document.body.innerText);
  log('messages page shows the message:', shown.includes('aGVsbG8gZnJvbSB0aGUgY29uc29sZS'));
  await page.screenshot({ path: '/tmp/webui/messages.png', fullPage: true });
} catch (e) {
  problems.push(`driver: ${e.stack}`);
  await page.screenshot({ path: '/tmp/webui/failure.png', fullPage: true }).catch(() => {});
}
await browser.close();
console.log('\nAPI calls made by the console:\n' + [...new Set(api)].join('\n'));
console.log(`\nproblems (${problems.length}):\n` + problems.join('\n'));
process.exit(problems.length ? 1 : 0);
