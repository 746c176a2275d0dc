#!/usr/bin/env python3
# Trees for benches/RESULTS.md "Kept ignored files on generated trees" (issue 47): a kernel-style
# in-tree build (the 6.1 sources of benches/fetch-data.sh with simulated build output beside
# them) and a site/-style output of many small ignored directories, under /tmp/ab47/trees.
# The variant with 50 page directories per section: change `i // 100` to `i // 50`.
import os, random, shutil, subprocess, sys
random.seed(47)
base = '/tmp/ab47/trees'
# 1. kernel-style in-tree build: the 6.1 source with build output beside it (simulated)
k = os.path.join(base, 'kbuild')
if not os.path.exists(k):
    subprocess.run(['cp', '-a', os.path.expanduser('~/.cache/rewind-bench/linux'), k], check=True)
    subprocess.run(['git', 'init', '-q', k], check=True)
    def w(p, n):
        with open(p, 'wb') as f:
            f.write(os.urandom(n))
    objs = 0
    for d, dirs, files in os.walk(k):
        if '.git' in dirs: dirs.remove('.git')
        cs = [f for f in files if f.endswith('.c')]
        if not cs: continue
        for i, c in enumerate(cs):
            stem = c[:-2]
            w(os.path.join(d, stem + '.o'), random.randint(2000, 40000))
            w(os.path.join(d, '.' + stem + '.o.cmd'), random.randint(800, 3000))
            objs += 1
            if d.startswith(os.path.join(k, 'drivers')) and i % 3 == 0:
                w(os.path.join(d, stem + '.mod.c'), 900)
                w(os.path.join(d, stem + '.mod'), 40)
                w(os.path.join(d, stem + '.ko'), random.randint(20000, 90000))
                w(os.path.join(d, '.' + stem + '.ko.cmd'), 1500)
        w(os.path.join(d, 'built-in.a'), 3000)
        w(os.path.join(d, '.built-in.a.cmd'), 400)
        w(os.path.join(d, 'modules.order'), 100)
    w(os.path.join(k, 'vmlinux'), 8 << 20)
    w(os.path.join(k, 'System.map'), 2 << 20)
    w(os.path.join(k, '.config'), 200_000)
    w(os.path.join(k, '.config.old'), 200_000)
    w(os.path.join(k, 'Module.symvers'), 500_000)
    g = os.path.join(k, 'include/generated'); os.makedirs(g, exist_ok=True)
    for i in range(20): w(os.path.join(g, f'gen{i}.h'), 3000)
    c = os.path.join(k, 'include/config'); os.makedirs(c, exist_ok=True)
    for i in range(2500): open(os.path.join(c, f'CONFIG_SYM{i}'), 'w').close()
    w(os.path.join(c, 'auto.conf'), 60_000)
    print('kbuild objects', objs)
# 2. a site/-style output: many small directories under an ignored name not in the bulk list
s = os.path.join(base, 'site')
if not os.path.exists(s):
    os.makedirs(os.path.join(s, 'docs'))
    subprocess.run(['git', 'init', '-q', s], check=True)
    open(os.path.join(s, '.gitignore'), 'w').write('/site/\n')
    open(os.path.join(s, 'mkdocs.yml'), 'w').write('site_name: x\n')
    for i in range(300):
        open(os.path.join(s, 'docs', f'page{i}.md'), 'w').write(f'# page {i}\n' + 'text\n' * 50)
    for i in range(3000):
        d = os.path.join(s, 'site', f'section{i // 100}', f'page{i}')
        os.makedirs(d)
        with open(os.path.join(d, 'index.html'), 'wb') as f: f.write(os.urandom(random.randint(8000, 30000)))
    for i in range(30):
        d = os.path.join(s, 'site', 'assets', f'a{i}')
        os.makedirs(d)
        for j in range(20):
            with open(os.path.join(d, f'f{j}.js'), 'wb') as f: f.write(os.urandom(5000))
    print('site done')
