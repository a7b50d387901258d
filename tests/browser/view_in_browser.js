// view_in_browser.js: opens hybridprof's output where users look, in a real
// headless browser (Debian's chromium through puppeteer-core), and prints a
// fact a line for the test that runs it:
//   speedscope SPEEDSCOPE_DIR FILE SHOT.png   speedscope (served from its npm
//       package by a local HTTP server) loads FILE (Chrome JSON or folded
//       stacks): "title TEXT", then "text" lines: the function names its
//       sandwich view lists, for each profile (thread) in the file.
//   svg FILE.svg SHOT.png                     the flame graph: "frames N",
//       then clicks the widest frame narrower than the graph and prints
//       "zoomed K": how many frames changed width.
// Chromium is /usr/bin/chromium unless CHROMIUM says otherwise.
'use strict';
const fs = require('fs');
const http = require('http');
const path = require('path');
const puppeteer = require('puppeteer-core');

function serve(root, extra) {
  const types = {'.html': 'text/html', '.js': 'text/javascript', '.css': 'text/css', '.json': 'application/json',
                 '.wasm': 'application/wasm', '.png': 'image/png', '.woff2': 'font/woff2', '.txt': 'text/plain'};
  const server = http.createServer((req, res) => {
    const url = decodeURIComponent(req.url.split('?')[0].split('#')[0]);
    const file = url === '/data' ? extra : path.join(root, url === '/' ? 'index.html' : url);
    if (!file.startsWith(root) && file !== extra) { res.writeHead(403); res.end(); return; }
    fs.readFile(file, (err, data) => {
      if (err) { res.writeHead(404); res.end(); return; }
      res.writeHead(200, {'Content-Type': types[path.extname(file)] || 'application/octet-stream',
                          'Access-Control-Allow-Origin': '*'});
      res.end(data);
    });
  });
  return new Promise(resolve => server.listen(0, '127.0.0.1', () => resolve(server)));
}

async function main() {
  const [mode, ...args] = process.argv.slice(2);
  const browser = await puppeteer.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
  });
  try {
    const page = await browser.newPage();
    await page.setViewport({width: 1280, height: 800});
    page.on('pageerror', e => console.log('error ' + e.message));
    if (mode === 'speedscope') {
      const [dir, file, shot] = args;
      const server = await serve(path.resolve(dir), path.resolve(file));
      const port = server.address().port;
      const data = `http://127.0.0.1:${port}/data`;
      await page.goto(`http://127.0.0.1:${port}/index.html#profileURL=${encodeURIComponent(data)}&title=${encodeURIComponent(path.basename(file))}`,
                      {waitUntil: 'networkidle0', timeout: 60000});
      await page.waitForFunction(() => document.title.includes(' - speedscope'), {timeout: 60000});
      console.log('title ' + await page.title());
      // The sandwich view lists every function in a table.
      const sandwich = await page.$$eval('div, span, button', els => {
        const e = els.find(el => el.textContent.trim().toLowerCase().endsWith('sandwich') && el.children.length < 3);
        if (e) e.click();
        return !!e;
      });
      if (sandwich) await new Promise(r => setTimeout(r, 1500));
      // A file holds a profile a thread ("NAME (1/2)"), shown one at a time
      // from the first (a thread with a sample or two, the main thread
      // waiting for its workers, may come first): each one's names, in
      // turn, `n` moving to the next.
      const profiles = await page.evaluate(() => {
        const m = document.body.innerText.match(/\((\d+)\/(\d+)\)/);
        return m ? +m[2] : 1;
      });
      for (let i = 0; i < profiles; ++i) {
        if (i > 0) {
          await page.keyboard.press('n');
          await new Promise(r => setTimeout(r, 1000));
        }
        const text = await page.evaluate(() => document.body.innerText);
        for (const line of text.split('\n')) if (line.trim()) console.log('text ' + line.trim());
      }
      await page.screenshot({path: shot});
      server.close();
    } else if (mode === 'svg') {
      const [file, shot] = args;
      await page.goto('file://' + path.resolve(file), {waitUntil: 'load'});
      const widths = () => page.$$eval('g.frame rect', rs => rs.map(r => r.getAttribute('width')));
      const before = await widths();
      console.log('frames ' + before.length);
      // The widest frame that is not the whole graph, clicked as a user would.
      const target = await page.$$eval('g.frame', gs => {
        const all = Math.max(...gs.map(g => +g.getAttribute('data-w')));
        const part = gs.filter(g => +g.getAttribute('data-w') < 0.9 * all);
        part.sort((a, b) => b.getAttribute('data-w') - a.getAttribute('data-w'));
        if (!part.length) return null;
        const r = part[0].querySelector('rect').getBoundingClientRect();
        return {x: r.x + r.width / 2, y: r.y + r.height / 2};
      });
      if (target) {
        await page.mouse.click(target.x, target.y);
        await new Promise(r => setTimeout(r, 300));
      }
      const after = await widths();
      console.log('zoomed ' + after.filter((w, i) => w !== before[i]).length);
      await page.screenshot({path: shot});
    } else {
      throw new Error('mode: speedscope or svg');
    }
  } finally {
    await browser.close();
  }
}

main().catch(e => { console.log('error ' + e.message); process.exit(1); });
